#!/usr/bin/env python3
"""run_batch.py - `encore run-batch`: a file of OpenAI batch requests answered
into a file of results.

    run_batch.py --encore BIN --models DIR CHECK

  answers  seventeen requests (chat, completions with logprobs and a batch of
           prompts, Responses; greedy and seeded, a seed of 2^53 + 1 that must
           arrive as written; two of 16 prompts x n 16, the server's whole default
           queue each) run four at a time with
           max_num_seqs 3: one result line per request in the input's order,
           each with its custom_id and ids of its own, and each body the reply
           `encore serve` gives the same body (ids and timestamps aside); the
           refused ones (a bad field, a stream, another URL, another model)
           with the server's status and error object, or the refusal's message;
           standard input and output with '-'
  input    malformed input files stop the command before the model loads, exit
           2, naming the file and line, the output file not created; a missing
           -o, an unwritable output file
Uses server_e2e.py's Server."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_e2e import MODEL, Server, fail, run_check  # noqa: E402

CHAT, COMPLETIONS, RESPONSES = "/v1/chat/completions", "/v1/completions", "/v1/responses"


def requests():
    """(custom_id, url, body) of the answered requests and the refused ones."""
    out = []
    for i, text in enumerate(["Hello", "What is 2 + 2?", "Name a colour.", "Tell me a story."]):
        out.append((f"chat-{i}", CHAT, {"model": MODEL, "messages": [{"role": "user", "content": text}],
                                        "max_tokens": 6 + 3 * i, "temperature": 0}))
    out.append(("chat-seeded", CHAT, {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}],
                                      "max_tokens": 12, "temperature": 0.9, "seed": 7, "n": 2}))
    out.append(("chat-logprobs", CHAT, {"model": MODEL, "messages": [{"role": "user", "content": "Yes?"}],
                                        "max_tokens": 5, "temperature": 0, "logprobs": True,
                                        "top_logprobs": 3}))
    for i, prompt in enumerate(["The capital of France is", [785, 6722, 315]]):
        out.append((f"cmpl-{i}", COMPLETIONS, {"model": MODEL, "prompt": prompt, "max_tokens": 7,
                                               "temperature": 0, "logprobs": 2}))
    out.append(("cmpl-batch", COMPLETIONS, {"model": MODEL, "prompt": ["a b c", "d e f"], "max_tokens": 4,
                                            "temperature": 0, "echo": True}))
    out.append(("resp-0", RESPONSES, {"model": MODEL, "input": "Hi there", "max_output_tokens": 5,
                                      "temperature": 0}))
    # a seed no double holds (2^53 + 1): the body must reach the server byte for byte
    out.append(("seed-2^53+1", COMPLETIONS, {"model": MODEL, "prompt": "x y", "max_tokens": 6,
                                             "temperature": 1.0, "seed": 9007199254740993}))
    # 16 prompts x n 16: each as many sequences as the server's default queue holds
    for i in range(2):
        out.append((f"wide-{i}", COMPLETIONS, {"model": MODEL, "prompt": [f"w{i} {k}" for k in range(16)],
                                               "n": 16, "max_tokens": 2, "temperature": 0}))
    refused = [
        ("bad-temperature", COMPLETIONS, {"model": MODEL, "prompt": "x", "temperature": -1}),
        ("stream", CHAT, {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": True}),
        ("other-url", "/v1/audio/speech", {"model": MODEL, "input": "x"}),
        ("other-model", COMPLETIONS, {"model": "no-such-model", "prompt": "x"}),
        # sent: the server answers a generative model's embeddings with its 400
        ("embeddings", "/v1/embeddings", {"model": MODEL, "input": "x"}),
    ]
    return out, refused


def without_ids(v):
    """A reply with the fields that differ between two runs of it removed."""
    if isinstance(v, dict):
        return {k: without_ids(x) for k, x in v.items() if k not in ("id", "created", "created_at")}
    if isinstance(v, list):
        return [without_ids(x) for x in v]
    return v


def input_lines(reqs):
    return "".join(json.dumps({"custom_id": c, "method": "POST", "url": u, "body": b}) + "\n\n" for c, u, b in reqs)


def run(a, args, stdin=None):
    p = subprocess.run([a.encore, "run-batch", "-m", os.path.join(a.models, MODEL)] + args, input=stdin,
                       capture_output=True, text=True, timeout=180)
    return p.returncode, p.stdout, p.stderr


def check_answers(a):
    answered, refused = requests()
    allreq = answered[:5] + refused[:2] + answered[5:] + refused[2:]
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
        with open(inp, "w") as f:
            f.write(input_lines(allreq))
        rc, _, err = run(a, ["-i", inp, "-o", outp, "--concurrency", "4", "--max-num-seqs", "3"])
        if rc != 0:
            fail(f"run-batch exited {rc}: {err}")
        with open(outp) as f:
            text = f.read()
    if not text.endswith("\n"):
        fail("the results do not end with a newline")
    lines = [json.loads(line) for line in text.splitlines()]
    if [o["custom_id"] for o in lines] != [c for c, _, _ in allreq]:
        fail(f"results out of order: {[o['custom_id'] for o in lines]}")
    ids = [o["id"] for o in lines] + [o["response"]["request_id"] for o in lines]
    if len(set(ids)) != len(ids) or not all(i.startswith(("batch_req_", "req_")) for i in ids):
        fail(f"ids not unique or not batch_req_/req_: {ids}")
    if f"{len(allreq)} requests in" not in err or f"{len(answered)} answered 200, {len(refused)} not" not in err:
        fail(f"no summary of {len(allreq)} requests on stderr: {err}")
    got = {o["custom_id"]: o for o in lines}
    with Server(a, "--max-queue-per-client", "256") as srv:  # a wide request alone fits
        for c, url, body in answered:
            o = got[c]
            if o["response"]["status_code"] != 200 or o["error"] is not None:
                fail(f"{c}: {o}")
            status, want, _ = srv.post(url, body)
            if status != 200:
                fail(f"{c}: the server answered {status}: {want}")
            if without_ids(o["response"]["body"]) != without_ids(want):
                fail(f"{c}: run-batch's body differs from the server's:\n{o['response']['body']}\n{want}")
        for c, url, body in refused[::3]:  # the server's own refusals: the same status and error
            status, want, _ = srv.post(url, body)
            o = got[c]
            if o["response"]["status_code"] != status or o["response"]["body"] is not None or o["error"] != want:
                fail(f"{c}: {o} against the server's {status} {want}")
    for c, needle in (("stream", "stream mode"), ("other-url", "not supported"),
                      ("embeddings", "does not support Embeddings API")):
        o = got[c]
        if o["response"]["status_code"] != 400 or needle not in str(o["error"]):
            fail(f"{c}: {o}")
    # standard input and output
    rc, out, err = run(a, ["-i", "-", "-o", "-"], stdin=input_lines(answered[:2]))
    if rc != 0 or [json.loads(line)["custom_id"] for line in out.splitlines()] != ["chat-0", "chat-1"]:
        fail(f"-i - -o -: exit {rc}, {out!r} {err}")
    print(f"ok: {len(allreq)} requests, in order, each body the server's")


def check_input(a):
    good = {"custom_id": "a", "method": "POST", "url": COMPLETIONS, "body": {"model": MODEL, "prompt": "x"}}
    cases = [
        (json.dumps(good) + "\nnot json\n", ":2: not a JSON object"),
        (json.dumps(dict(good, custom_id=3)), ":1: 'custom_id' must be a string"),
        (json.dumps({k: v for k, v in good.items() if k != "url"}), ":1: 'url' must be a string (it is missing)"),
        ("\n" + json.dumps(dict(good, body=[1])), ":2: 'body' must be an object"),
        ("\n \n", "no requests in it"),
    ]
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
        for text, needle in cases:
            with open(inp, "w") as f:
                f.write(text)
            t0 = time.time()
            rc, _, err = run(a, ["-i", inp, "-o", outp])
            want = inp + needle if needle.startswith(":") else needle
            if rc != 2 or want not in err:
                fail(f"{text!r}: exit {rc}, {err!r}, wanted 2 and {needle!r}")
            if "KV cache" in err or os.path.exists(outp):
                fail(f"{text!r}: the model loaded or the output was created before the input was checked")
            if time.time() - t0 > 60:
                fail("a malformed input took over a minute to refuse")
        with open(inp, "w") as f:
            f.write(json.dumps(good))
        for args, needle in ((["-i", inp], "-o FILE"), (["-i", os.path.join(d, "none.jsonl"), "-o", outp],
                                                         "No such file"),
                             (["-i", inp, "-o", os.path.join(d, "no", "out.jsonl")], "No such file")):
            rc, _, err = run(a, args)
            if rc != 2 or needle not in err:
                fail(f"{args}: exit {rc}, {err!r}")
    print("ok: malformed input refused by line, before the model loads")


if __name__ == "__main__":
    run_check(__doc__, globals())
