import { route } from "@/lib/api/route";
import { routes } from "@/lib/api/routes";
import { listCheckpoints } from "@/lib/db/checkpoints";
import { getRun } from "@/lib/db/runs";

// the steps only: the files' paths are the server's business
export const GET = route(routes.runCheckpoints, ({ params }) => {
  getRun(params.id); // 404 for an unknown run
  return { checkpoints: listCheckpoints(params.id).map((c) => ({ step: c.step, onnx: c.onnxPath !== null })) };
});
