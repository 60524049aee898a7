#!/usr/bin/env python3
"""server_structured.py - structured outputs through `encore serve`.

    server_structured.py --encore BIN --models DIR --schemas SCHEMAS.json

With the tiny real-vocabulary model (random weights): every schema of
SCHEMAS.json sent 4 times as OpenAI's response_format json_schema (chat) and
once as vLLM's guided_json and structured_outputs.json (completions), 8
requests at a time, seeded and sampled; every reply that finished with
"stop" must parse and validate (Python's jsonschema, independent of encore),
and "length" is the only other finish allowed. Also json_object, choices and
regex replies, and 400s naming the field or keyword for what is not
supported. Uses server_e2e.py's Server."""
import argparse
import json
import os
import re
import sys
import threading

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import server_e2e  # noqa: E402

FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, flush=True)


def constrained_requests(schemas):
    reqs = []
    for i, s in enumerate(schemas):
        for k in range(4):
            reqs.append((i, "/v1/chat/completions", {
                "messages": [{"role": "user", "content": f"item {k}"}], "max_tokens": 200, "seed": 10 * i + k,
                "temperature": 1.0,
                "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": s, "strict": True}}}))
        reqs.append((i, "/v1/completions", {"prompt": "x", "max_tokens": 200, "seed": i, "guided_json": s}))
        reqs.append((i, "/v1/completions", {"prompt": "y", "max_tokens": 200, "seed": i,
                                            "structured_outputs": {"json": json.dumps(s)}}))
    return reqs


def text_of(path, reply):
    c = reply["choices"][0]
    return (c["message"]["content"] if path.endswith("chat/completions") else c["text"]), c["finish_reason"]


def run_all(srv, reqs):
    results = [None] * len(reqs)

    def worker(idx):
        for j in range(idx, len(reqs), 8):
            _, path, body = reqs[j]
            results[j] = srv.post(path, body)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def check_schemas(srv, schemas):
    reqs = constrained_requests(schemas)
    stops = 0
    for (i, path, body), (status, reply, _) in zip(reqs, run_all(srv, reqs)):
        check(status == 200, f"schema {i} {path}: {status} {reply}")
        if status != 200:
            continue
        text, finish = text_of(path, reply)
        check(finish in ("stop", "length"), f"schema {i}: finish_reason {finish}")
        if finish != "stop":
            continue
        stops += 1
        try:
            jsonschema.Draft202012Validator(
                schemas[i], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(json.loads(text))
        except (ValueError, jsonschema.ValidationError) as e:
            check(False, f"schema {i} {path}: {text!r}: {str(e).splitlines()[0]}")
    check(stops >= len(reqs) // 2, f"only {stops} of {len(reqs)} replies finished with stop")
    print(f"{len(reqs)} constrained requests, {stops} finished with stop, all valid" if not FAILS else "", flush=True)


def check_others(srv):
    status, r, _ = srv.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "q"}],
                                                     "max_tokens": 200, "seed": 1,
                                                     "response_format": {"type": "json_object"}})
    text, finish = text_of("/v1/chat/completions", r)
    check(status == 200 and (finish != "stop" or isinstance(json.loads(text), dict)), f"json_object: {r}")
    status, r, _ = srv.post("/v1/completions", {"prompt": "q", "max_tokens": 50, "seed": 2,
                                                "guided_choice": ["left", "right", "up down"]})
    check(status == 200 and r["choices"][0]["text"] in ("left", "right", "up down"), f"guided_choice: {r}")
    # a choice ends before min_tokens: the constraint's end wins (a 500 before: no token allowed)
    status, r, _ = srv.post("/v1/completions", {"prompt": "q", "max_tokens": 50, "seed": 2, "min_tokens": 40,
                                                "guided_choice": ["left", "right", "up down"]})
    check(status == 200 and r["choices"][0]["text"] in ("left", "right", "up down")
          and r["choices"][0]["finish_reason"] == "stop", f"guided_choice with min_tokens: {status} {r}")
    status, r, _ = srv.post("/v1/completions", {"prompt": "q", "max_tokens": 50, "seed": 3,
                                                "structured_outputs": {"regex": "[a-f]{3}-[0-9]{1,2}"}})
    text, finish = text_of("/v1/completions", r)
    check(status == 200 and (finish != "stop" or re.fullmatch("[a-f]{3}-[0-9]{1,2}", text)), f"regex: {r}")
    status, r, _ = srv.post("/v1/completions", {"prompt": "q", "max_tokens": 5, "response_format": {"type": "text"}})
    check(status == 200, f"response_format text: {r}")


def check_thinking(srv):
    """A chat reply may reason before its structured output (thinking on, Qwen3's default): with
    logit_bias ranking </think> over "\n\n" over <think>, greedy, the reply is
    <think>\n\n</think>\n\nD: reasoning "\n\n", content "\n\nD" (as vLLM's qwen3 reasoning parser
    splits it), six tokens with the end of text; with thinking off, D alone, two tokens."""
    bias = {"151668": 100, "271": 90, "151667": 80}
    for thinking in True, False:
        body = {"messages": [{"role": "user", "content": "q"}], "max_tokens": 20, "temperature": 0,
                "logit_bias": bias, "structured_outputs": {"regex": "[0-9]"},
                "chat_template_kwargs": {"enable_thinking": thinking}}
        status, r, _ = srv.post("/v1/chat/completions", body)
        c = r["choices"][0] if status == 200 else {}
        m, usage = c.get("message", {}), r.get("usage", {})
        want = ("\n\n", "\n\n[0-9]", 6) if thinking else (None, "[0-9]", 2)
        check(c.get("finish_reason") == "stop" and m.get("reasoning_content") == want[0]
              and re.fullmatch(want[1], m.get("content") or "") and usage.get("completion_tokens") == want[2],
              f"structured output with thinking {thinking}: {r}")


def check_refusals(srv):
    cases = [
        ({"guided_json": {"type": "object", "minProperties": 1}}, "minProperties"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "array", "items": {"type": "string", "contains": {}}}}}}, "contains"),
        ({"response_format": {"type": "xml"}}, "response_format type 'xml'"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "schema' is required"),
        ({"structured_outputs": {"whitespace_pattern": " "}}, "structured_outputs.whitespace_pattern"),
        ({"guided_whitespace_pattern": " "}, "guided_whitespace_pattern"),
        ({"guided_regex": "a(?=b)"}, "lookaround"),
        ({"guided_grammar": "root ::= x"}, "undefined rule 'x'"),
        ({"guided_regex": "a", "guided_choice": ["b"]}, "both constrain the output"),
    ]
    for extra, needle in cases:
        body = {"prompt": "q", "max_tokens": 5}
        body.update(extra)
        status, r, _ = srv.post("/v1/completions", body)
        msg = r.get("error", {}).get("message", "")
        check(status == 400 and needle in msg, f"{extra}: {status} {msg!r} (want 400 with {needle!r})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encore", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--schemas", required=True)
    a = ap.parse_args()
    schemas = json.load(open(a.schemas, encoding="utf-8"))
    with server_e2e.Server(a) as srv:
        check_refusals(srv)
        check_others(srv)
        check_thinking(srv)
        check_schemas(srv, schemas)
    if FAILS:
        print(f"{len(FAILS)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
