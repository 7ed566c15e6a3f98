"""`spawn serve --hub URL [--bind HOST:PORT] [--advertise-url URL]`: one node under gunicorn."""
import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spawn", description="Black Widow crawler node")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run one node under gunicorn (one worker, threads)")
    serve.add_argument("--hub", required=True, help="the hub's base URL, e.g. http://127.0.0.1:8700")
    serve.add_argument("--bind", default="127.0.0.1:8701", help="HOST:PORT to listen on")
    serve.add_argument("--advertise-url", help="URL the hub calls this node at (default: http://BIND)")
    args = parser.parse_args(argv)

    env = dict(os.environ, BW_HUB_URL=args.hub, BW_BIND=args.bind,
               BW_ADVERTISE_URL=args.advertise_url or f"http://{args.bind}")
    # check the configuration here, where the error is readable, rather than inside the worker
    from shared.config import SpawnConfig
    from shared.errors import ConfigError
    try:
        SpawnConfig.from_env(env)
    except ConfigError as exc:
        print(f"spawn: {exc}", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "gunicorn", "--config", "python:spawn.gunicorn_conf", "spawn.app:get_app()"]
    os.execvpe(cmd[0], cmd, env)
    return 0    # not reached


if __name__ == "__main__":
    sys.exit(main())
