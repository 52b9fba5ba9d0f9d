// Small made-up source trees for the repository-rule tests (test/arch): files written under a fresh
// temp folder, removed after each test.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";

/** A function writing `{relative path: text}` into a new temp folder and returning its path; folders go after each test. */
export function useScratchTrees(prefix: string): (files: Record<string, string>) => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  return (files) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    dirs.push(root);
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    }
    return root;
  };
}
