#!/usr/bin/env python3
"""server_tool_choice.py - tool_choice "required" and a named function,
enforced through `encore serve`.

    server_tool_choice.py --encore BIN --models DIR

With the tiny real-vocabulary model (random weights, so only the constraint
makes it call a tool): chat requests with three tools, seeded and sampled,
whole and streamed. Every reply must finish with "tool_calls" ("stop" for a
named function, as OpenAI and vLLM say) or "length"; one that finishes so
must carry calls whose names are allowed
(only the named one for a named choice, exactly one call) and whose
arguments parse as JSON and validate against the tool's parameters (Python's
jsonschema, independent of encore); a tool without parameters takes any
object. A tool whose schema has an unsupported keyword is a 400 naming the
keyword and the tool. Uses server_e2e.py's Server."""
import argparse
import json
import os
import sys
import threading

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import server_e2e  # noqa: E402

FAILS = []

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                         "unit": {"enum": ["c", "f"]}},
        "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "add-2", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
                                         "b": {"type": "boolean"}},
        "required": ["a"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "now", "description": "the time"}},
]
SCHEMAS = {t["function"]["name"]: t["function"].get("parameters", {"type": "object"}) for t in TOOLS}


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg, flush=True)


def body_of(choice, seed, stream, thinking=False):
    return {"messages": [{"role": "user", "content": f"call something {seed}"}], "tools": TOOLS,
            "tool_choice": choice, "max_tokens": 128, "seed": seed, "temperature": 1.0, "stream": stream,
            "chat_template_kwargs": {"enable_thinking": thinking}}


def streamed(srv, body):
    """The finish reason and tool calls of a stream, assembled by index as
    the openai clients do (id and name first, arguments in pieces)."""
    status, _, data = srv.request("POST", "/v1/chat/completions", body)
    if status != 200:
        return status, None, data.decode(errors="replace")
    calls, finish = {}, None
    for line in data.decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ch = json.loads(line[6:])["choices"][0]
        finish = ch.get("finish_reason") or finish
        for tc in ch["delta"].get("tool_calls") or []:
            c = calls.setdefault(tc["index"], {"name": "", "arguments": ""})
            fn = tc.get("function") or {}
            c["name"] += fn.get("name") or ""
            c["arguments"] += fn.get("arguments") or ""
    return status, finish, [calls[k] for k in sorted(calls)]


def whole(srv, body):
    status, r, _ = srv.post("/v1/chat/completions", body)
    if status != 200:
        return status, None, r
    ch = r["choices"][0]
    calls = [tc["function"] for tc in ch["message"].get("tool_calls") or []]
    return status, ch["finish_reason"], calls


def check_reply(what, allowed, one, reply):
    status, finish, calls = reply
    check(status == 200, f"{what}: {status} {calls}")
    if status != 200:
        return 0
    done = "stop" if one else "tool_calls"  # a named function's call: "stop"
    check(finish in (done, "length"), f"{what}: finish_reason {finish}")
    if finish != done:
        return 0
    check(len(calls) >= 1 and (not one or len(calls) == 1), f"{what}: {len(calls)} calls")
    for c in calls:
        check(c["name"] in allowed, f"{what}: called {c['name']!r}, allowed {allowed}")
        try:
            jsonschema.Draft202012Validator(SCHEMAS.get(c["name"], {})).validate(json.loads(c["arguments"]))
        except (ValueError, jsonschema.ValidationError) as e:
            check(False, f"{what}: {c['name']} arguments {c['arguments']!r}: {str(e).splitlines()[0]}")
    return 1


def check_choices(srv):
    named = {"type": "function", "function": {"name": "add-2"}}
    cases = []
    for seed in range(4):
        for stream in (False, True):
            cases.append((f"required seed {seed} stream {stream}", list(SCHEMAS), False,
                          body_of("required", seed, stream)))
            cases.append((f"named seed {seed} stream {stream}", ["add-2"], True, body_of(named, seed, stream)))
    cases.append(("required thinking", list(SCHEMAS), False, body_of("required", 99, False, True)))
    results = [None] * len(cases)

    def worker(t):
        for j in range(t, len(cases), 6):
            body = cases[j][3]
            results[j] = (streamed if body["stream"] else whole)(srv, body)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    called = sum(check_reply(w, allowed, one, res) for (w, allowed, one, _), res in zip(cases, results))
    check(called >= len(cases) // 2, f"only {called} of {len(cases)} replies finished with their calls")
    print(f"{len(cases)} requests, {called} finished with their calls", flush=True)


def check_refusals(srv):
    bad = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "minProperties": 1}}}]
    for choice in ("required", {"type": "function", "function": {"name": "f"}}):
        body = body_of(choice, 1, False)
        body["tools"] = bad
        status, r, _ = srv.post("/v1/chat/completions", body)
        msg = r.get("error", {}).get("message", "")
        check(status == 400 and "minProperties" in msg and '"f"' in msg and r["error"]["param"] == "tools",
              f"bad schema, {choice}: {status} {r}")
    body = body_of("required", 1, False)
    body["response_format"] = {"type": "json_object"}
    status, r, _ = srv.post("/v1/chat/completions", body)
    check(status == 400 and "both constrain" in r.get("error", {}).get("message", ""),
          f"required and response_format: {status} {r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encore", required=True)
    ap.add_argument("--models", required=True)
    with server_e2e.Server(ap.parse_args()) as srv:
        check_refusals(srv)
        check_choices(srv)
    print(f"{len(FAILS)} failure(s)" if FAILS else "ok")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
