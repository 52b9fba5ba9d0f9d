"""The `turnlens` console script: `turnlens sync DIR` and `turnlens import KIND PATH`."""

import argparse
import json
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="turnlens", description="TurnLens client: upload spooled runs, import other trainers' logs.")
    ap.add_argument("--url", help="server (default $TURNLENS_URL, else http://127.0.0.1:3000)")
    ap.add_argument("--token", help="the server's API token (default $TURNLENS_API_TOKEN)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    sub = ap.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("sync", help="upload a spool directory (a run's, or a folder of them)")
    s.add_argument("dir")

    from .importers import KINDS

    i = sub.add_parser("import", help="import a run from another tool's files")
    i.add_argument("kind", choices=sorted(KINDS), help="; ".join(f"{k}: {v.__doc__.strip().splitlines()[0]}" for k, v in sorted(KINDS.items())))
    i.add_argument("path", help="a file, a folder, or a tar/zip of either (extracted safely: no links, no paths out, size and file-count limits)")
    i.add_argument("--project", default="default")
    i.add_argument("--name", help="run name (default: from the files)")
    i.add_argument("--env-id", default="external", help="environment id stored on rollout groups")
    i.add_argument("--offline", action="store_true", help="send nothing: write one client spool per run (as TURNLENS_MODE=offline) for `turnlens sync`")
    i.add_argument("--spool", help="where --offline writes the spools (default $TURNLENS_DIR/spool)")
    args = ap.parse_args(argv)

    if args.cmd == "sync":
        from .sync import sync

        from .transport import ApiError

        try:
            reports = sync(args.dir, args.url, args.token)
        except FileNotFoundError as e:
            print(f"turnlens sync: {e}", file=sys.stderr)
            return 2
        except ApiError as e:  # e.g. 403: the write key is not the run's
            print(f"turnlens sync: {e}", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(reports, indent=2))
        for r in reports:
            if not args.json:
                print(f"{r['dir']}: run {r['runId']}: sent {r['sent']} request(s), rejected {len(r['rejected'])}, pending {r['pending']}"
                      + (f" ({r['error']})" if r.get("error") else ""))
                for why in r["rejected"]:
                    print(f"  rejected: {why}")
        return 1 if any(r["pending"] for r in reports) else 0

    from .importers import run_import

    from .transport import ApiError, Unavailable

    try:
        reports = run_import(args.kind, args.path, project=args.project, name=args.name, env_id=args.env_id,
                             url=args.url, token=args.token, mode="offline" if args.offline else None, spool_root=args.spool,
                             log=lambda line: print(f"turnlens import: {line}", file=sys.stderr, flush=True))
    except (FileNotFoundError, ValueError, ApiError, Unavailable) as e:
        print(f"turnlens import: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        for r in reports:
            print(r.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
