"""`python -m llm_upstream [--port N]` (with tests/ on PYTHONPATH): the scripted upstream with the default
AgentScript, in the foreground, for trying agents and SDKs by hand."""

from __future__ import annotations

import argparse
import time

from llm_upstream.server import UpstreamServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with UpstreamServer(port=args.port) as upstream:
        print(
            f"llm upstream on {upstream.base_url} (OpenAI base URL {upstream.openai_url}); Ctrl-C to stop", flush=True
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
