#!/usr/bin/env python3
"""engine_cli.py - end-to-end checks of the engine through the `encore` CLI.

Each check is one ctest test: `engine_cli.py --encore BIN --models DIR CHECK`.
The engine is compared with itself, bit for bit (logits are printed with 9
significant digits, which round-trips an f32 exactly):

  prefill_vs_decode  a prompt's logits prefilled at once == fed one token per step
  threads            logits with 1 thread == with 2 threads, and with the pool's
                     waits awake for no time or 50 ms (ENCORE_CPU_SPIN_US)
  preemption         a KV pool too small for the batch (requests wait, sequences
                     are preempted and recomputed) gives the same tokens as an
                     ample pool, and preemption really happened
  prefix_caching     requests sharing a prefix: the cache serves its blocks (counted in
                     --stats), computed + served == what --no-prefix-caching computes,
                     the tokens are the same, and ENCORE_NO_PREFIX_CACHING=1 turns it off
  bad_args           bad arguments exit 2 with a one-line reason (a bad
                     ENCORE_CPU_SPIN_US exits 1, naming it; an embedding model
                     given to generate, logits or bench)
  bad_checkpoints    broken checkpoints exit 1 naming the file and the tensor/field
  bad_requests       impossible requests are refused with exit 2 and a reason
  chat               `encore chat` answers each typed line through the chat template,
                     keeps the conversation, and refuses an unknown template unless --raw
  bench_steps        `encore bench --json`: a decode step's wall time is that of one
                     forward pass (tokens/s x step time = the sequences running, at
                     most the batch and more than half of it), in one step per
                     replay and in four; a host round trip of k4 spans several
                     steps, of captured exactly one
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

PRESETS = ["tiny-gqa1-hd64-f32", "tiny-gqa2-hd64-bf16", "tiny-gqa4-hd128-bf16",
           "tiny-gqa2-hd128-f16-sharded", "tiny-qwen3vocab"]


def run(args, check=True, env=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       env=None if env is None else {**os.environ, **env})
    if check and p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def ids(n, start=3, step=7, mod=500):
    return " ".join(str((start + i * step) % mod) for i in range(n))


def check_prefill_vs_decode(a):
    for preset in PRESETS:
        m = os.path.join(a.models, preset)
        base = [a.encore, "logits", "-m", m, "--prompt-ids", ids(70), "--top", "8"]
        whole = run(base).stdout
        one_by_one = run(base + ["--max-num-batched-tokens", "1"]).stdout
        chunks = run(base + ["--max-num-batched-tokens", "13", "--block-size", "32"]).stdout
        if len(whole.splitlines()) != 70:
            sys.exit(f"FAIL: {preset}: expected 70 positions, got {len(whole.splitlines())}")
        if whole != one_by_one or whole != chunks:
            sys.exit(f"FAIL: {preset}: logits differ between prefill and token-by-token")
        print(f"ok {preset}: 70 positions bit-identical (prefill, 1-token steps, 13-token chunks)")


def check_threads(a):
    for preset in PRESETS:
        m = os.path.join(a.models, preset)
        base = [a.encore, "logits", "-m", m, "--prompt-ids", ids(40, 11), "--top", "8"]
        one, two = run(base + ["-t", "1"]).stdout, run(base + ["-t", "2"]).stdout
        if one != two:
            sys.exit(f"FAIL: {preset}: logits differ between 1 and 2 threads")
        for us in ["0", "50000"]:
            if run(base + ["-t", "2"], env={"ENCORE_CPU_SPIN_US": us}).stdout != one:
                sys.exit(f"FAIL: {preset}: logits differ with ENCORE_CPU_SPIN_US={us}")
        print(f"ok {preset}: 1 thread == 2 threads, waits awake for 0, default and 50000 us")


def batch(a, model, requests, extra, env=None):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")
    try:
        p = run([a.encore, "batch", "-m", model, "--requests", f.name, "--stats"] + extra, env=env)
    finally:
        os.unlink(f.name)
    stats = json.loads(p.stderr.strip().splitlines()[-1])
    return [json.loads(line) for line in p.stdout.splitlines()], stats


def check_preemption(a):
    m = os.path.join(a.models, "tiny-gqa2-hd64-bf16")
    reqs = [{"prompt_ids": [int(x) for x in ids(10 + 9 * i, 5 + i).split()], "max_tokens": 40,
             "ignore_eos": True, "arrive_step": 2 * i,
             **({"temperature": 0.8, "seed": i} if i % 3 == 2 else {})} for i in range(6)]
    ample, st_ample = batch(a, m, reqs, [])
    tight, st_tight = batch(a, m, reqs, ["--kv-blocks", "8", "--max-num-batched-tokens", "24"])
    if st_ample["preemptions"] != 0 or st_tight["preemptions"] == 0:
        sys.exit(f"FAIL: expected preemption only with the tight pool: {st_ample} {st_tight}")
    if ample != tight:
        for x, y in zip(ample, tight):
            if x != y:
                sys.exit(f"FAIL: request {x['index']} differs under preemption:\n{x}\n{y}")
    if any(len(r["ids"]) != 40 for r in tight):
        sys.exit("FAIL: a request was truncated")
    print(f"ok: 6 requests identical with {st_tight['preemptions']} preemptions in an 8-block pool")


def check_prefix_caching(a):
    m = os.path.join(a.models, "tiny-gqa2-hd128-f16-sharded")
    shared = [int(x) for x in ids(70, 9).split()]
    reqs = [{"prompt_ids": shared[:n] + [int(x) for x in ids(k, 100 + k).split()], "max_tokens": 24,
             "ignore_eos": True, "arrive_step": 3 * i}
            for i, (n, k) in enumerate([(70, 2), (70, 5), (64, 0), (40, 3), (65, 0)])]
    on, st_on = batch(a, m, reqs, [])
    off, st_off = batch(a, m, reqs, ["--no-prefix-caching"])
    env_off, st_env = batch(a, m, reqs, [], env={"ENCORE_NO_PREFIX_CACHING": "1"})
    # hits: 64 (70+5), 48 (64 tokens: the last is computed), 32 (40+3), 64 (65)
    want = 64 + 48 + 32 + 64
    if st_on["prefix_cache_hits"] != want or st_off["prefix_cache_hits"] or st_env["prefix_cache_hits"]:
        sys.exit(f"FAIL: prefix-cache hits {st_on['prefix_cache_hits']} (expected {want}), "
                 f"{st_off['prefix_cache_hits']} and {st_env['prefix_cache_hits']} when off")
    if st_on["prefill_tokens"] + st_on["prefix_cache_hits"] != st_off["prefill_tokens"]:
        sys.exit(f"FAIL: computed + served != computed without the cache: {st_on} {st_off}")
    if st_on["prefix_cache_queries"] != sum(len(r["prompt_ids"]) for r in reqs):
        sys.exit(f"FAIL: queries {st_on['prefix_cache_queries']}")
    if on != off or on != env_off:
        sys.exit("FAIL: tokens differ with and without prefix caching")
    print(f"ok: {want} of {st_on['prefix_cache_queries']} prompt tokens served from the cache, same tokens")


def expect_fail(args, code, *needles, env=None):
    p = run(args, check=False, env=env)
    if p.returncode != code:
        sys.exit(f"FAIL: {' '.join(args)}: exit {p.returncode}, expected {code}; stderr: {p.stderr}")
    err = p.stderr.strip()
    for n in needles:
        if n not in err:
            sys.exit(f"FAIL: {' '.join(args)}: message lacks '{n}': {err}")
    print(f"ok exit {code}: {err.splitlines()[-1][:150]}")
    return p


def check_bad_args(a):
    m = os.path.join(a.models, "tiny-gqa2-hd64-bf16")
    e = a.encore
    expect_fail([e], 2, "usage")
    expect_fail([e, "frobnicate"], 2, "unknown command")
    expect_fail([e, "generate", "--prompt-ids", "1 2"], 2, "-m DIR")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2", "--bogus"], 2, "--bogus")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2", "-n", "zero"], 2, "-n")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2", "-n", "0"], 2, "-n")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 x 2"], 2, "--prompt-ids")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2", "--temperature", "-1"], 2, "--temperature")
    expect_fail([e, "generate", "-m", m, "--prompt-ids"], 2, "needs a value")
    expect_fail([e, "logits", "-m", m, "--prompt-ids", "1", "--top", "0"], 2, "--top")
    expect_fail([e, "batch", "-m", m], 2, "--requests")
    expect_fail([e, "bench", "-m", m, "--runs", "0"], 2, "--runs")
    expect_fail([e, "bench", "-m", m, "--batches", "0,3"], 2, "--batches")
    emb = os.path.join(a.models, "tiny-embedding-qwen3vocab")  # generates nothing: serve embeds
    for cmd in (["generate", "--prompt-ids", "1 2"], ["logits", "--prompt-ids", "1 2"], ["bench"]):
        expect_fail([e, cmd[0], "-m", emb] + cmd[1:], 2, "is an embedding model", "/v1/embeddings")
    expect_fail([e, "bench", "-m", m, "--modes", ","], 2, "--modes: no mode")
    expect_fail([e, "bench", "-m", m, "--modes", "k4,k4"], 2, "--modes: 'k4' given twice")
    expect_fail([e, "bench", "-m", m, "--modes", "k4", "--eager"], 2, "--eager", "--modes")
    expect_fail([e, "generate", "-m", os.path.join(a.models, "tiny-qwen3vocab"), "-p", "\udcff"], 2, "-p:",
                "invalid UTF-8")
    expect_fail([e, "bench", "serve", "--url", "http://127.0.0.1:99999"], 2, "--url", "bad port")
    with tempfile.TemporaryDirectory() as d:  # a FIFO as the model: refused, not waited on
        fifo = os.path.join(d, "model.gguf")
        os.mkfifo(fifo)
        try:
            p = subprocess.run([e, "generate", "-m", fifo, "--prompt-ids", "1"], capture_output=True,
                               text=True, timeout=30)
        except subprocess.TimeoutExpired:
            sys.exit("FAIL: generate -m FIFO waited for a writer")
        if p.returncode != 1 or "not a regular file" not in p.stderr:
            sys.exit(f"FAIL: generate -m FIFO: exit {p.returncode}, {p.stderr.strip()}")
    for bad in ["0", "junk", "5000"]:
        expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2"], 2, "ENCORE_THREADS", env={"ENCORE_THREADS": bad})
    # yes/no variables: false is no (it was on: any value but 0), a value of neither kind an error
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2"], 2, "ENCORE_EAGER", "'maybe'",
                env={"ENCORE_EAGER": "maybe"})
    for value, eager in [("false", False), ("Off", False), ("true", True), ("1", True)]:
        p = run([e, "generate", "-m", m, "--prompt-ids", "1 2", "-n", "5", "--stats"],
                env={"ENCORE_EAGER": value})
        if ("captures: 0" in p.stderr) != eager:
            sys.exit(f"FAIL: ENCORE_EAGER={value}: {p.stderr.strip()!r}")
    for cmd in (["generate", "-p", "hi"], ["generate", "--prompt-ids", "1"], ["bench"]):
        missing = os.path.join(a.models, "no-such-model.gguf")
        p = expect_fail([e, cmd[0], "-m", missing] + cmd[1:], 1, missing + ": No such file or directory")
        if "config.json" in p.stderr or "tokenizer.json" in p.stderr:
            sys.exit(f"FAIL: a missing model path reported as a file inside it: {p.stderr}")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1", "--block-size", "24"], 2, "16 or 32")
    # bf16 activations where the kernels cannot: refused by name, before the weights load
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1", "--bf16-activations"], 1,
                "bf16 activations need", "AVX512-BF16", env={"ENCORE_CPU_ISA": "scalar"})
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1"], 2, "ENCORE_BF16_ACTIVATIONS",
                env={"ENCORE_BF16_ACTIVATIONS": "bf16"})
    for bad in ["", "fast", "-1", "100001", "20us"]:
        expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2"], 2, "ENCORE_CPU_SPIN_US",
                    "[0, 100000]", env={"ENCORE_CPU_SPIN_US": bad})
    with tempfile.TemporaryDirectory() as d:  # a file or line holds one JSON value, nothing after it
        schema, ebnf, reqs = (os.path.join(d, n) for n in ("s.json", "g.ebnf", "r.jsonl"))
        open(schema, "w").write('{"type": "integer"} junk')
        open(ebnf, "w").write('root ::= "a"')
        open(reqs, "w").write('{"prompt_ids": [1, 2]}{"prompt_ids": [3]}\n')
        qv = os.path.join(a.models, "tiny-qwen3vocab")
        gen = [e, "generate", "-m", qv, "--prompt-ids", "1 2", "-n", "2"]
        expect_fail(gen + ["--json-schema", schema], 2, schema, "more than one value (at byte 20)")
        open(schema, "w").write('{"type": "integer"}')
        expect_fail(gen + ["--json-schema", schema, "--grammar", ebnf], 2, "--json-schema, --grammar",
                    "at most one of")
        expect_fail([e, "batch", "-m", m, "--requests", reqs], 1, "line 1: not one JSON object")
        for line in ["[1] junk", "[1][2]"]:
            p = subprocess.run([e, "detokenize", "-m", qv], input=line + "\n", capture_output=True,
                               text=True, timeout=60)
            if p.returncode != 1 or "JSON array of token ids (alone)" not in p.stderr:
                sys.exit(f"FAIL: detokenize {line!r}: exit {p.returncode}, {p.stderr.strip()!r}")
    if os.path.exists("/dev/full"):  # output that cannot be written is a failure, not a success
        for cmd in (["generate", "-m", m, "--prompt-ids", "1 2", "-n", "2"],
                    ["logits", "-m", m, "--prompt-ids", "1 2"]):
            with open("/dev/full", "w") as full:
                p = subprocess.run([e] + cmd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
            if p.returncode != 1 or "error writing stdout" not in p.stderr:
                sys.exit(f"FAIL: {cmd[0]} > /dev/full: exit {p.returncode}, {p.stderr.strip()!r}")
        print("ok: a full stdout is exit 1")
    # each --help lists the engine options its command takes: not those it refuses
    refused = {"serve": ["--verify-capture"], "bench": ["--eager", "--decode-steps"]}
    for cmd in ["generate", "logits", "batch", "bench", "serve"]:
        p = run([e, cmd, "--help"])
        listed = {o for o in ["--verify-capture", "--eager", "--decode-steps", "--quantize"]
                  if re.search(r"^  " + o + " ", p.stdout, re.M)}
        want = {"--verify-capture", "--eager", "--decode-steps", "--quantize"} - set(refused.get(cmd, []))
        if "usage: encore " + cmd not in p.stdout or listed != want:
            sys.exit(f"FAIL: {cmd} --help lists {sorted(listed)} of the engine options, not {sorted(want)}")
    print("ok: --help for every command, without the options it refuses")


def check_logits_full_context(a):
    """`encore logits` scores a prompt as long as --max-model-len (it generates
    nothing): the same lines as under a larger limit; one token more is refused."""
    e, m = a.encore, os.path.join(a.models, "tiny-gqa2-hd64-bf16")
    args = [e, "logits", "-m", m, "--prompt-ids", ids(32), "--top", "3"]
    full = run(args + ["--max-model-len", "32"]).stdout
    roomy = run(args + ["--max-model-len", "64"]).stdout
    if full != roomy or len(full.splitlines()) != 32:
        sys.exit(f"FAIL: logits at max-model-len 32 differ from 64 ({len(full.splitlines())} lines)")
    expect_fail(args + ["--max-model-len", "31"], 2, "exceeds max_model_len 31")
    print("ok: logits over a prompt of max-model-len tokens")


def check_rope_context(a):
    """A scaled RoPE stretches the model's length as vLLM takes it: linear by 2
    over max_position_embeddings 8192 allows --max-model-len 16384, no more;
    the plain model stops at its max_position_embeddings."""
    e, scaled = a.encore, os.path.join(a.models, "tiny-linear-rope-f32")
    plain = os.path.join(a.models, "tiny-gqa1-hd64-f32")  # max_position_embeddings 4096
    args = ["logits", "--prompt-ids", "1 2 3", "--top", "1", "--kv-blocks", "8"]
    run([e] + args + ["-m", scaled, "--max-model-len", "16384"])
    expect_fail([e] + args + ["-m", scaled, "--max-model-len", "16385"], 2, "[2, 16384]",
                "rope scaling")
    run([e] + args + ["-m", plain, "--max-model-len", "4096"])
    expect_fail([e] + args + ["-m", plain, "--max-model-len", "4097"], 2, "[2, 4096]",
                "max_position_embeddings")
    print("ok: the context limits of a scaled and a plain RoPE")


def check_bad_checkpoints(a):
    with tempfile.TemporaryDirectory() as d:
        run([a.python, a.generator, "--bad", "all", "--out", d])
        expect_fail([a.encore, "generate", "-m", os.path.join(d, "nonexistent"), "--prompt-ids", "1"], 1,
                    "nonexistent")
        needles = {
            "truncated": ["model.safetensors"],
            "header-too-long": ["model.safetensors", "header"],
            "bad-json": ["model.safetensors"],
            "wrong-shape": ["q_proj"],
            "missing-tensor": ["k_norm"],
            "bad-dtype": ["model.safetensors"],
            "overlap": ["model.safetensors"],
            "offset-out-of-range": ["model.safetensors"],
            # HF defaults num_key_value_heads to num_attention_heads; the k_proj
            # shape then disagrees with the config.
            "config-missing-field": ["config.json", "k_proj"],
            "config-rope-scaling": ["config.json", "dynamic"],
            "shard-missing": ["safetensors"],
        }
        for kind, words in needles.items():
            model = os.path.join(d, "bad-" + kind)
            if not os.path.isdir(model):
                sys.exit(f"FAIL: generator made no {model}")
            expect_fail([a.encore, "generate", "-m", model, "--prompt-ids", "1 2 3", "-n", "2"], 1, *words)


def check_batch_text(a):
    """batch's "text": each request's ids decoded with special tokens left out, as `encore
    detokenize --skip-special-tokens` decodes them (an EOS that ended it gives no text); null where
    an id is one of the embedding's rows past the tokenizer's (151669 of 151936); absent for a
    model without a tokenizer."""
    m = os.path.join(a.models, "tiny-qwen3vocab")
    reqs = [{"prompt": "Hello there", "max_tokens": 6, "temperature": 1, "seed": k} for k in range(3)]
    reqs += [{"prompt_ids": [9707], "max_tokens": 4, "logit_bias": {"151645": 100}},
             {"prompt_ids": [9707], "max_tokens": 2, "ignore_eos": True, "logit_bias": {"151900": 100}}]
    out, _ = batch(a, m, reqs, [])
    ids = "".join(json.dumps(o["ids"]) + "\n" for o in out[:4])
    p = subprocess.run([a.encore, "detokenize", "-m", m, "--skip-special-tokens"], input=ids,
                       capture_output=True, text=True, timeout=60)
    want = [json.loads(line) for line in p.stdout.splitlines()]
    if p.returncode != 0 or [o["text"] for o in out[:4]] != want or len(want) != 4:
        sys.exit(f"FAIL: batch text {[o['text'] for o in out[:4]]} != detokenize's {want} ({p.stderr!r})")
    if out[3]["ids"] != [151645] or out[3]["text"] != "" or out[4]["ids"] != [151900] * 2 or out[4]["text"] is not None:
        sys.exit(f"FAIL: batch text of an EOS / of ids past the tokenizer: {out[3]} {out[4]}")
    plain, _ = batch(a, os.path.join(a.models, "tiny-gqa2-hd64-bf16"), [{"prompt_ids": [1, 2], "max_tokens": 2}], [])
    if "text" in plain[0]:
        sys.exit(f"FAIL: a model without a tokenizer: {plain[0]}")
    print(f"ok: batch text, e.g. {out[0]['text']!r}; an EOS none, ids past the tokenizer null")


def check_chat_interrupt(a):
    """On a terminal (a pseudo-terminal here), Ctrl-C stops the reply being written and the session
    goes on: the next line gets a reply of its own; Ctrl-C at the prompt quits with status 0."""
    import pty
    import select
    import signal
    import time
    m = os.path.join(a.models, "tiny-qwen3vocab")
    pid, fd = pty.fork()
    if pid == 0:  # the child: a long reply (no end of sequence), one thread
        os.execv(a.encore, [a.encore, "chat", "-m", m, "-n", "4000", "-t", "1", "--no-think",
                            "--logit-bias", "151645=-100", "--logit-bias", "151643=-100"])
    seen = b""

    def read_until(done, timeout=120):
        """Read the terminal until done(seen) or the timeout; whether done."""
        nonlocal seen
        end = time.time() + timeout
        while not done(seen) and time.time() < end:
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        return done(seen)

    def has(needle):
        return lambda text: needle in text

    try:
        if not read_until(has(b"> ")):
            sys.exit(f"FAIL: chat on a terminal: no prompt: {seen[-300:]!r}")
        for k, line in enumerate([b"Hello there", b"Again"]):
            mark = len(seen)
            os.write(fd, line + b"\n")
            # some of the reply (4000 tokens at most: far from done), then Ctrl-C
            if not read_until(lambda text: len(text) > mark + len(line) + 200):
                sys.exit(f"FAIL: chat on a terminal: no reply to {line!r}: {seen[mark:][-300:]!r}")
            os.kill(pid, signal.SIGINT)  # as the terminal's Ctrl-C does
            if not read_until(lambda text: text.count(b" [stopped]\r\n> ") == k + 1, 60):
                sys.exit(f"FAIL: Ctrl-C did not stop reply {k + 1}: {seen[mark:][-300:]!r}")
        os.kill(pid, signal.SIGINT)  # at the prompt: quit
        end, status = time.time() + 60, None
        while status is None and time.time() < end:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status, pid = st, 0
            else:
                read_until(lambda text: False, 0.2)
        if status is None or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            sys.exit(f"FAIL: Ctrl-C at the prompt: status {status}")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    print("ok: chat on a terminal: Ctrl-C stops a reply, the session goes on; at the prompt it quits")


def check_bad_requests(a):
    m = os.path.join(a.models, "tiny-gqa2-hd64-bf16")
    e = a.encore
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2 3", "-n", "100", "--max-model-len", "64"], 2,
                "max_model_len")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 99999"], 2, "vocabulary")
    expect_fail([e, "generate", "-m", m, "--prompt-ids", "1 2", "-n", "200", "--kv-blocks", "4"], 2,
                "KV blocks")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write('{"prompt_ids":[1,2],"max_tokens":3}\n{"prompt_ids":"oops"}\n')
        f.flush()
        expect_fail([e, "batch", "-m", m, "--requests", f.name], 1, "line 2")


def check_chat(a):
    m = os.path.join(a.models, "tiny-qwen3vocab")
    chat = [a.encore, "chat", "-m", m, "-n", "12", "--temperature", "0", "--no-think"]
    one = subprocess.run(chat, input="Hello there\n", capture_output=True, text=True, timeout=300)
    # the reply is what generate gives for the same prompt through the template
    tmpl = subprocess.run([a.encore, "generate", "-m", m, "-p",
                           "<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
                           "-n", "12", "--temperature", "0"], capture_output=True, text=True, timeout=300)
    if one.returncode != 0 or tmpl.returncode != 0 or one.stdout != tmpl.stdout or not one.stdout.strip():
        sys.exit(f"FAIL: chat reply {one.stdout!r} ({one.stderr}) != generate's {tmpl.stdout!r}")
    # a line that is not text (bytes not UTF-8, a NUL) is not sent, and the session goes on: the
    # reply after it is the one the conversation gives without it
    bad = subprocess.run(chat, input=b"\xff\xfe\nab\x00cd\nHello there\n", capture_output=True, timeout=300)
    if bad.returncode != 0 or bad.stdout.decode() != one.stdout or b"invalid UTF-8" not in bad.stderr \
            or b"NUL byte" not in bad.stderr:
        sys.exit(f"FAIL: chat after lines that are not text: exit {bad.returncode}, {bad.stdout!r}, "
                 f"{bad.stderr!r}")
    lines = "Hello there\n/reset\nWhat is 2+2?\n/exit\nnever read\n"
    p = subprocess.run(chat, input=lines, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not p.stdout.startswith(one.stdout) or len(p.stdout) <= len(one.stdout):
        sys.exit(f"FAIL: chat conversation: exit {p.returncode}, {p.stdout!r}, {p.stderr}")
    replies = [p.stdout]
    print(f"ok: chat replied {replies!r}")
    with tempfile.TemporaryDirectory() as d:
        for f in os.listdir(m):
            if f != "tokenizer_config.json":
                os.symlink(os.path.join(os.path.abspath(m), f), os.path.join(d, f))
        with open(os.path.join(m, "tokenizer_config.json")) as f:
            cfg = json.load(f)
        cfg["chat_template"] = "{% for m in messages %}{{ m.content }}{% endfor %}"
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f)
        expect_fail([a.encore, "chat", "-m", d], 2, "--raw", "--chat-template")
        # another template in its place: by name, or the model's own template from a file, replies
        # as the model with its own template does
        with open(os.path.join(d, "own.jinja"), "w") as f:
            with open(os.path.join(m, "tokenizer_config.json")) as g:
                f.write(json.load(g)["chat_template"])
        for given in ("qwen3", os.path.join(d, "own.jinja")):
            p = subprocess.run(chat[:3] + [d] + chat[4:] + ["--chat-template", given], input="Hello there\n",
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0 or p.stdout != one.stdout:
                sys.exit(f"FAIL: chat --chat-template {given}: {p.returncode} {p.stdout!r} {p.stderr} "
                         f"!= {one.stdout!r}")
        with open(os.path.join(d, "other.jinja"), "w") as f:
            f.write(cfg["chat_template"])
        expect_fail([a.encore, "chat", "-m", d, "--chat-template", "qwen2"], 2, "neither a file nor")
        expect_fail([a.encore, "chat", "-m", d, "--chat-template", "qwen3-coder"], 2, "template file")
        expect_fail([a.encore, "chat", "-m", d, "--chat-template", os.path.join(d, "other.jinja")], 2,
                    "other.jinja", "not a template encore renders")
        p = subprocess.run([a.encore, "chat", "-m", d, "--raw", "-n", "4", "--temperature", "0"],
                           input="plain text\n", capture_output=True, text=True, timeout=300)
        raw = subprocess.run([a.encore, "generate", "-m", d, "-p", "plain text", "-n", "4", "--temperature", "0"],
                             capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or raw.returncode != 0 or p.stdout != raw.stdout or not p.stdout.strip():
            sys.exit(f"FAIL: chat --raw: {p.returncode} {p.stdout!r} {p.stderr} vs generate {raw.stdout!r}")
        print("ok: unknown template refused, --raw and --chat-template work")


def check_bench_steps(a):
    m = os.path.join(a.models, "tiny-gqa2-hd64-bf16")
    p = run([a.encore, "bench", "-m", m, "--json", "--modes", "captured,k4", "--batches", "1,3", "--runs", "1",
             "--prompt-len", "8", "--gen-len", "17", "-t", "1"])
    rep = json.loads(p.stdout)
    for mode, by_batch in rep["step_ms"].items():
        for batch, st in by_batch.items():
            tps = rep["modes"][mode][batch]
            seqs = tps * st["wall"] / 1e3
            if not 0.5 * int(batch) < seqs <= 1.01 * int(batch):
                sys.exit(f"FAIL: {mode}, {batch} seq: {tps} tokens/s x {st['wall']} ms per step = {seqs:.3f} "
                         f"tokens per step, want at most {batch} and more than half that")
            steps = st["round_trip"] / st["wall"]
            lo, hi = (0.99, 1.01) if mode == "captured" else (2.0, 4.01)
            if not lo <= steps <= hi:
                sys.exit(f"FAIL: {mode}, {batch} seq: a round trip of {st['round_trip']} ms is {steps:.2f} steps "
                         f"of {st['wall']} ms, want {lo}..{hi}")
    print(f"ok: tokens/s x step time <= the batch; k4 round trips of "
          f"{rep['step_ms']['k4']['3']['round_trip'] / rep['step_ms']['k4']['3']['wall']:.2f} steps")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encore", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--generator", default=os.path.join(os.path.dirname(__file__), "..", "scripts",
                                                        "gen_checkpoint.py"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("check", choices=[n[len("check_"):] for n in globals() if n.startswith("check_")])
    a = ap.parse_args()
    globals()["check_" + a.check](a)


if __name__ == "__main__":
    main()
