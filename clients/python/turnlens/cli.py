"""The `turnlens` console script: `turnlens sync DIR`, `turnlens import KIND PATH`, `turnlens watch FORMAT DIR`
and `turnlens mcp`."""

import argparse
import errno
import json
import os
import sys
from typing import List, Optional

# sysexits.h: a temporary failure (a full disk); the import may succeed when run again
EX_TEMPFAIL = 75


def main(argv: Optional[List[str]] = None) -> int:
    # The connection options are accepted before and after the command (`turnlens --url X import ...`
    # and `turnlens import ... --url X`): the sub-commands take them too, defaulting to "not given".
    def common(p: argparse.ArgumentParser, default) -> None:
        p.add_argument("--url", default=default, help="server (default $TURNLENS_URL, else http://127.0.0.1:3000)")
        p.add_argument("--token", default=default, help="the server's API token (default $TURNLENS_API_TOKEN)")
        p.add_argument("--json", action="store_true", default=default, help="print the report as JSON")

    ap = argparse.ArgumentParser(prog="turnlens", description="TurnLens client: upload spooled runs, import other trainers' logs.")
    common(ap, None)
    ap.add_argument("--write-key", default=None, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("sync", help="upload a spool directory (a run's, or a folder of them)")
    s.add_argument("dir")
    common(s, argparse.SUPPRESS)

    from .importers import KINDS

    i = sub.add_parser("import", help="import a run from another tool's files", formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="formats:\n" + "\n".join(f"  {k:<12} {(v.__doc__ or '').strip().splitlines()[0]}" for k, v in sorted(KINDS.items())))
    common(i, argparse.SUPPRESS)
    i.add_argument("--write-key", default=argparse.SUPPRESS,
                   help="the write key of the run an earlier import made (re-importing from another machine: that "
                        "import's machine keeps it in ~/.turnlens/keys/RUN_ID)")
    i.add_argument("kind", choices=sorted(KINDS), metavar="FORMAT", help="what PATH is (the formats are listed below)")
    i.add_argument("path", help="a file, a folder, or a tar/zip of either (extracted safely: no links, no paths out, size and file-count limits)")
    i.add_argument("--project", default="default")
    i.add_argument("--name", help="run name (default: from the files)")
    i.add_argument("--env-id", default="external", help="environment id stored on rollout groups")
    i.add_argument("--offline", action="store_true", help="send nothing: write one client spool per run (as TURNLENS_MODE=offline) for `turnlens sync`")
    i.add_argument("--spool", help="where --offline writes the spools (default $TURNLENS_DIR/spool)")
    from .watch import FORMATS

    w = sub.add_parser("watch", help="follow a folder a trainer is writing and send each step as it lands",
                       description="Polls DIR and sends each new, complete step (or line) with the FORMAT importer's reader; "
                                   "a restarted watch continues where it stopped ($TURNLENS_DIR/watch). Ctrl-C stops it; "
                                   "the run stays running until `turnlens import FORMAT DIR` finishes it.")
    w.add_argument("--url", default=argparse.SUPPRESS, help="server (default $TURNLENS_URL, else http://127.0.0.1:3000)")
    w.add_argument("--token", default=argparse.SUPPRESS, help="the server's API token (default $TURNLENS_API_TOKEN)")
    w.add_argument("kind", choices=FORMATS, metavar="FORMAT", help=f"what DIR holds: {', '.join(FORMATS)}")
    w.add_argument("path", metavar="DIR", help="the folder the trainer writes (or one JSONL file for jsonl / verl-file)")
    w.add_argument("--project", default="default")
    w.add_argument("--name", help="run name (default: from the folder)")
    w.add_argument("--env-id", default="external", help="environment id stored on rollout groups")
    w.add_argument("--interval", type=float, default=0.5, help="seconds between polls (default 0.5)")
    w.add_argument("--quiet", type=float, default=2.0,
                   help="verl: a step file no later step followed is complete once unchanged this long (default 2 s)")
    w.add_argument("--once", action="store_true", help="send what is complete now and exit")
    m = sub.add_parser("mcp", help="serve the read API to an AI assistant (Model Context Protocol over stdio)",
                       description="A Model Context Protocol server on stdin/stdout: tools that list runs and read their "
                                   "config, metrics, trajectories, turns and credit. Add it to an MCP client's config as "
                                   "the command `turnlens mcp`.")
    m.add_argument("--url", default=argparse.SUPPRESS, help="server (default $TURNLENS_URL, else http://127.0.0.1:3000)")
    m.add_argument("--token", default=argparse.SUPPRESS, help="the server's API token (default $TURNLENS_API_TOKEN)")
    args = ap.parse_args(argv)

    if args.cmd == "mcp":
        from .mcp_server import main as serve_mcp

        return serve_mcp(args.url, args.token)

    if args.cmd == "watch":
        return _watch(args)

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

    from .importers.archive import DISK_FULL
    from .importers.base import NOTHING
    from .transport import ApiError, Unavailable

    try:
        reports = run_import(args.kind, args.path, project=args.project, name=args.name, env_id=args.env_id,
                             url=args.url, token=args.token, mode="offline" if args.offline else None, spool_root=args.spool,
                             log=lambda line: print(f"turnlens import: {line}", file=sys.stderr, flush=True),
                             write_key=args.write_key)
    except (FileNotFoundError, ValueError, ApiError, Unavailable) as e:
        print(f"turnlens import: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a reader's bug or a file no reader foresaw: say so in one line, no trace
        if isinstance(e, OSError) and e.errno in DISK_FULL:
            # not the file's fault: EX_TEMPFAIL tells the dashboard's import job to try again later
            print(f"turnlens import: the disk is full ({errno.errorcode[e.errno]}: {e.strerror}); the import stopped, "
                  "run it again once space is freed", file=sys.stderr)
            return EX_TEMPFAIL
        if os.environ.get("TURNLENS_DEBUG"):
            raise
        print(f"turnlens import: could not read {os.path.basename(os.path.normpath(args.path))} as {args.kind} "
              f"({type(e).__name__}: {e}); set TURNLENS_DEBUG=1 for the trace", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        for r in reports:
            print(r.summary())
    if reports and all(r.note.startswith(NOTHING) for r in reports):
        rejected = [x for r in reports for x in r.rejected]
        first = "; ".join(f"{w}: {why}" for w, why in rejected[:3])
        print(f"turnlens import: {NOTHING}; {len(rejected)} row(s) rejected" + (f", e.g. {first}" if first else ""), file=sys.stderr)
        return 1
    return 0


def _watch(args: argparse.Namespace) -> int:
    import signal
    import threading

    from .importers.base import WriteKeyRefused
    from .transport import ApiError
    from .watch import Watch

    def log(line: str) -> None:
        print(f"turnlens watch: {line}", file=sys.stderr, flush=True)

    try:
        w = Watch(args.kind, args.path, project=args.project, name=args.name, env_id=args.env_id, url=args.url,
                  token=args.token, quiet=args.quiet, log=log)
    except ValueError as e:
        log(str(e))
        return 2
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        if stop.is_set():  # the second Ctrl-C: at once (the piece in flight is sent again next time, stored once)
            raise KeyboardInterrupt
        stop.set()  # the first: finish the piece in flight and record it, so a restart does not send it again
        log("stopping once the piece in flight is recorded (Ctrl-C again stops now)")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    log(f"following {w.path} ({args.kind}); where it stopped is kept in {w.state_file}")
    sent = 0
    try:
        sent = w.run(args.interval, once=args.once, stop=stop)
    except KeyboardInterrupt:
        pass
    except (ApiError, WriteKeyRefused) as e:
        log(str(e))
        return 2
    finally:
        w.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stop.is_set():
        log("stopped")
    if args.once:
        log(f"{sent} piece(s) sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
