#!/usr/bin/env python3
"""server_responses.py - POST /v1/responses (OpenAI's Responses API) end to end.

    server_responses.py --encore BIN --models DIR CHECK

Each Responses request is checked against the chat request it stands for,
sent to the same server (greedy, so both are the same run): the same prompt
tokens (usage), the same output tokens, the message's text the chat content,
the reasoning item's text the reasoning_content, each function_call item a
tool call (name and arguments), status "incomplete" exactly when the chat
reply finished with "length".

  equal     instructions and a string input; message items with input_text and
            output_text parts; a tool conversation as function_call and
            function_call_output items (flat function tools); a named and a
            "required" tool_choice (enforced: function_call items); text.format
            json_schema (the text parses and validates) and json_object;
            max_output_tokens (incomplete); include's logprobs (one entry per
            output token, top_logprobs alternatives; streamed, the deltas' in
            order the whole reply's); reasoning (a
            Thinking-2507 template: the reply is reasoning, reasoning_tokens
            all of output_tokens) and include_reasoning false
  stream    the same requests streamed: "event: T" then "data: {"type": T}"
            frames, sequence_number 0, 1, 2, ..., response.created and
            response.in_progress first, response.completed last (an
            incomplete reply's too, its status inside) and no [DONE]; items added in output order, every
            item_id the item at its output_index, the deltas of each item its
            final text, the final response equal to the whole reply's
  errors    the 4xx of bad requests, each naming the Responses field; GET
            /v1/responses/{id} and previous_response_id a 404 (no response is
            kept); an unknown field answered as without it and named in one
            warning on the server's stderr; a failed engine step a 500, a
            stream's last event then {"type": "error", "sequence_number"}
Uses server_e2e.py's Server."""
import json
import os
import sys
import tempfile

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_e2e import TIME, WEATHER, Server, fail, run_check, server_with_env, template_model  # noqa: E402

CHAT, RESP = "/v1/chat/completions", "/v1/responses"
GREEDY = {"temperature": 0}


def flat(tool):
    """A chat tool {"type", "function": {...}} as the Responses API spells it."""
    return dict({"type": "function"}, **tool["function"])


def post(srv, path, body):
    status, r, _ = srv.post(path, body)
    if status != 200:
        fail(f"POST {path} {json.dumps(body)[:300]}: {status} {r}")
    return r


def items(r, kind):
    return [o for o in r["output"] if o["type"] == kind]


def message_text(r):
    texts = [p["text"] for m in items(r, "message") for p in m["content"] if p["type"] == "output_text"]
    return "".join(texts)


def reasoning_text(r):
    return "".join(p["text"] for o in items(r, "reasoning") for p in o.get("content") or [])


def expect_same(srv, rbody, cbody, what):
    """rbody (Responses) answers as cbody (chat) does; returns the Response."""
    r, c = post(srv, RESP, dict(GREEDY, **rbody)), post(srv, CHAT, dict(GREEDY, **cbody))
    ch = c["choices"][0]
    u, cu = r["usage"], c["usage"]
    calls = [(t["function"]["name"], t["function"]["arguments"]) for t in ch["message"].get("tool_calls") or []]
    got_calls = [(o["name"], o["arguments"]) for o in items(r, "function_call")]
    # chat's "tool_calls" for an auto call cut short by max_tokens (vLLM's) is an incomplete Response
    cut = ch["finish_reason"] == "length" or (ch["finish_reason"] == "tool_calls"
                                              and cu["completion_tokens"] == cbody.get("max_tokens"))
    want_status = "incomplete" if cut else "completed"
    problems = []
    if r["object"] != "response" or not r["id"].startswith("resp_") or r["error"] is not None:
        problems.append("object, id or error")
    if (u["input_tokens"], u["output_tokens"], u["total_tokens"]) != \
            (cu["prompt_tokens"], cu["completion_tokens"], cu["total_tokens"]):
        problems.append(f"usage {u} != chat's {cu}")
    if message_text(r) != (ch["message"]["content"] or ""):
        problems.append(f"text {message_text(r)!r} != chat's {ch['message']['content']!r}")
    if reasoning_text(r) != (ch["message"].get("reasoning_content") or ""):
        problems.append("reasoning differs from chat's reasoning_content")
    if got_calls != calls:
        problems.append(f"calls {got_calls} != chat's {calls}")
    if r["status"] != want_status:
        problems.append(f"status {r['status']} (chat finished {ch['finish_reason']})")
    if (r["incomplete_details"] or {}).get("reason") != ("max_output_tokens" if want_status == "incomplete" else None):
        problems.append(f"incomplete_details {r['incomplete_details']}")
    ids = [o["id"] for o in r["output"]]
    if len(set(ids)) != len(ids) or any(o["type"] == "function_call" and not o["call_id"].startswith("call_")
                                        for o in r["output"]):
        problems.append(f"item ids {ids} not unique, or a call without its call_id")
    if problems:
        fail(f"{what}: " + "; ".join(problems) + f"\n  response {json.dumps(r)[:800]}\n  chat {json.dumps(c)[:500]}")
    print(f"ok {what}: as chat ({u['input_tokens']} + {u['output_tokens']} tokens, {r['status']}, "
          f"{len(r['output'])} items)")
    return r


USER = "Weather in Paris and the time in Tokyo?"
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
          "required": ["n", "ok"], "additionalProperties": False}
UNIT = {"type": "function", "function": {"name": "set_unit", "parameters": {
    "type": "object", "properties": {"unit": {"enum": ["c", "k"]}}, "required": ["unit"]}}}


# a call the model is made to write (tool_choice auto), then more text than max tokens allow
FORCED_CALL = {"regex": '<tool_call>\\n\\{"name": "get_time", "arguments": \\{\\}\\}\\n</tool_call>( x){200}'}


def cases():
    """(what, Responses body, chat body) pairs that must answer alike."""
    talk_items = [
        {"role": "user", "content": USER},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris","days":2}'},
        {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": '{ "tz" : "Asia/Tokyo" }'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'},
        {"type": "function_call_output", "call_id": "call_2", "output": "09:14"},
    ]
    talk_chat = [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris","days":2}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": '{ "tz" : "Asia/Tokyo" }'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "09:14"},
    ]
    hi = [{"role": "user", "content": "Hi"}]
    return [
        ("instructions and a string input",
         {"instructions": "Be brief.", "input": "Name a color.", "max_output_tokens": 12},
         {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a color."}],
          "max_tokens": 12}),
        ("message items with parts",
         {"input": [{"type": "message", "role": "developer", "content": "Terse."},
                    {"role": "user", "content": [{"type": "input_text", "text": "A"}, {"type": "input_text", "text": "B"}]},
                    {"role": "assistant", "content": [{"type": "output_text", "text": "X"}]},
                    {"role": "user", "content": "C"}], "max_output_tokens": 10},
         {"messages": [{"role": "system", "content": "Terse."}, {"role": "user", "content": "A\nB"},
                       {"role": "assistant", "content": "X"}, {"role": "user", "content": "C"}], "max_tokens": 10}),
        ("a tool conversation as items",
         {"input": talk_items, "tools": [flat(WEATHER), flat(TIME)], "max_output_tokens": 10},
         {"messages": talk_chat, "tools": [WEATHER, TIME], "max_tokens": 10}),
        ("a named tool_choice",
         {"input": USER, "tools": [flat(TIME), flat(UNIT)], "tool_choice": {"type": "function", "name": "set_unit"},
          "max_output_tokens": 60, "chat_template_kwargs": {"enable_thinking": False}},
         {"messages": [{"role": "user", "content": USER}], "tools": [TIME, UNIT], "max_tokens": 60,
          "tool_choice": {"type": "function", "function": {"name": "set_unit"}},
          "chat_template_kwargs": {"enable_thinking": False}}),
        ("tool_choice required",
         {"input": USER, "tools": [flat(UNIT)], "tool_choice": "required", "max_output_tokens": 60,
          "chat_template_kwargs": {"enable_thinking": False}},
         {"messages": [{"role": "user", "content": USER}], "tools": [UNIT], "tool_choice": "required",
          "max_tokens": 60, "chat_template_kwargs": {"enable_thinking": False}}),
        ("text.format json_schema",
         {"input": "Count.", "max_output_tokens": 40,
          "text": {"format": {"type": "json_schema", "name": "count", "schema": SCHEMA, "strict": True}}},
         {"messages": [{"role": "user", "content": "Count."}], "max_tokens": 40,
          "response_format": {"type": "json_schema", "json_schema": {"name": "count", "schema": SCHEMA,
                                                                      "strict": True}}}),
        ("text.format json_object",
         {"input": "JSON please.", "max_output_tokens": 16, "text": {"format": {"type": "json_object"}}},
         {"messages": [{"role": "user", "content": "JSON please."}], "max_tokens": 16,
          "response_format": {"type": "json_object"}}),
        ("a reasoning item before the calls it led to",
         {"input": [talk_items[0], {"type": "reasoning", "summary": [],
                                    "content": [{"type": "reasoning_text", "text": "Two tools."}]}] + talk_items[1:],
          "tools": [flat(WEATHER), flat(TIME)], "max_output_tokens": 6},
         {"messages": [talk_chat[0], dict(talk_chat[1], reasoning_content="Two tools.")] + talk_chat[2:],
          "tools": [WEATHER, TIME], "max_tokens": 6}),
        ("an auto call, then text cut by max_output_tokens",
         {"input": "time?", "tools": [flat(TIME)], "max_output_tokens": 40, "structured_outputs": FORCED_CALL,
          "chat_template_kwargs": {"enable_thinking": False}},
         {"messages": [{"role": "user", "content": "time?"}], "tools": [TIME], "max_tokens": 40,
          "structured_outputs": FORCED_CALL, "chat_template_kwargs": {"enable_thinking": False}}),
        ("max_output_tokens reached",
         {"input": hi, "max_output_tokens": 3, "ignore_eos": True},
         {"messages": hi, "max_tokens": 3, "ignore_eos": True}),
    ]


def check_equal(a):
    with Server(a) as srv:
        for what, rbody, cbody in cases():
            r = expect_same(srv, rbody, cbody, what)
            if what == "a named tool_choice":
                calls = items(r, "function_call")
                if len(calls) != 1 or calls[0]["name"] != "set_unit" or r["tool_choice"] != rbody["tool_choice"]:
                    fail(f"named tool_choice: {r['output']} (tool_choice echoed {r['tool_choice']})")
            if what == "text.format json_schema" and r["status"] == "completed":
                jsonschema.validate(json.loads(message_text(r)), SCHEMA)
            if what == "max_output_tokens reached" and items(r, "message")[0]["status"] != "incomplete":
                fail(f"an incomplete reply's message: {r['output']}")
            if what.startswith("an auto call") and (r["status"] != "incomplete" or [
                    o["name"] for o in items(r, "function_call")] != ["get_time"]):
                fail(f"an auto call cut short: {r['status']} {r['output']}")
            if what == "instructions and a string input" and (
                    r["instructions"] != "Be brief." or r["max_output_tokens"] != 12 or r["temperature"] != 0
                    or r["store"] is not False or r["tools"] != []):
                fail(f"the request's fields repeated: {r}")
        # include's logprobs: an entry per output token, with the alternatives asked for
        r = post(srv, RESP, dict(GREEDY, input="Hi", max_output_tokens=5, ignore_eos=True, top_logprobs=2,
                                 include=["message.output_text.logprobs"]))
        lp = items(r, "message")[0]["content"][0]["logprobs"]
        if len(lp) != r["usage"]["output_tokens"] or any(
                len(t["top_logprobs"]) != 2 or t["top_logprobs"][0]["logprob"] != t["logprob"] for t in lp):
            fail(f"include logprobs: {lp}")
        r = post(srv, RESP, dict(GREEDY, input="Hi", max_output_tokens=5, top_logprobs=2))
        if items(r, "message")[0]["content"][0]["logprobs"] != []:
            fail("logprobs without include: " + json.dumps(r["output"]))
        print("ok include message.output_text.logprobs: one entry per output token (none without it)")
    # reasoning: the Thinking-2507 template opens the think block, so the whole reply is reasoning
    with tempfile.TemporaryDirectory() as d, Server(template_model(a, d, "qwen3-thinking-2507.jinja")) as srv:
        hi = [{"role": "user", "content": "Hi"}]
        r = expect_same(srv, {"input": "Hi", "max_output_tokens": 4}, {"messages": hi, "max_tokens": 4},
                        "a reply that thinks")
        reasoning = items(r, "reasoning")
        if (len(reasoning) != 1 or not reasoning_text(r) or message_text(r)
                or r["usage"]["output_tokens_details"]["reasoning_tokens"] != r["usage"]["output_tokens"]):
            fail(f"reasoning: {r}")
        r = expect_same(srv, {"input": "Hi", "max_output_tokens": 4, "include_reasoning": False},
                        {"messages": hi, "max_tokens": 4, "include_reasoning": False}, "include_reasoning false")
        if items(r, "reasoning"):
            fail(f"include_reasoning false: {r['output']}")
        # </think> first (logit_bias): no reasoning, the rest content; one reasoning token
        bias = {"logit_bias": {"151668": 100}}
        r = expect_same(srv, dict(bias, input="Hi", max_output_tokens=3), dict(bias, messages=hi, max_tokens=3),
                        "a think block closed at once")
        if r["usage"]["output_tokens_details"]["reasoning_tokens"] != 1 or items(r, "reasoning"):
            fail(f"a think block closed by the first token: {r}")


def sse(srv, body):
    """The events of a streamed Response, checking the framing and order."""
    status, headers, data = srv.request("POST", RESP, dict(GREEDY, stream=True, **body))
    raw = data.decode()
    if status != 200 or "text/event-stream" not in headers.get("Content-Type", ""):
        fail(f"stream: {status} {headers} {raw[:300]}")
    if "[DONE]" in raw or not raw.endswith("\n\n"):
        fail(f"a Response stream ends with its last event, no [DONE]: {raw[-200:]!r}")
    events = []
    for frame in raw[:-2].split("\n\n"):
        lines = frame.split("\n")
        if len(lines) != 2 or not lines[0].startswith("event: ") or not lines[1].startswith("data: "):
            fail(f"frame {frame[:200]!r}")
        e = json.loads(lines[1][len("data: "):])
        if e["type"] != lines[0][len("event: "):] or e["sequence_number"] != len(events):
            fail(f"event {len(events)}: {lines[0]} / {e['type']} #{e['sequence_number']}")
        events.append(e)
    return events


def replay(events):
    """The output the events build, checked as they come (the official
    client's accumulator does the same)."""
    if [e["type"] for e in events[:2]] != ["response.created", "response.in_progress"]:
        fail(f"first events {[e['type'] for e in events[:2]]}")
    last = events[-1]  # response.completed, an incomplete reply's too (vLLM's; older clients read no other)
    if last["type"] != "response.completed" or last["response"]["status"] not in ("completed", "incomplete"):
        fail(f"last event {last['type']} status {last['response']['status']}")
    output, texts = [], {}
    for e in events[2:-1]:
        t = e["type"]
        if t == "response.output_item.added":
            if e["output_index"] != len(output) or e["item"]["status"] != "in_progress":
                fail(f"item added at {e['output_index']} with {len(output)} items: {e}")
            output.append(e["item"])
            texts[e["output_index"]] = ""
            continue
        item = output[e["output_index"]]
        if t == "response.output_item.done":
            if e["item"]["id"] != item["id"] or e["item"]["status"] == "in_progress":
                fail(f"item done {e}")
            output[e["output_index"]] = e["item"]
            continue
        if e["item_id"] != item["id"]:
            fail(f"{t}: item_id {e['item_id']} is not item {e['output_index']} ({item['id']})")
        if t.endswith(".delta"):
            texts[e["output_index"]] += e["delta"]
        elif t in ("response.output_text.done", "response.reasoning_text.done"):
            if e["text"] != texts[e["output_index"]]:
                fail(f"{t}: {e['text']!r} != its deltas {texts[e['output_index']]!r}")
        elif t == "response.function_call_arguments.done":
            if e["arguments"] != texts[e["output_index"]] or e["name"] != item["name"]:
                fail(f"{t}: {e} != its deltas")
        elif t not in ("response.content_part.added", "response.content_part.done"):
            fail(f"unexpected event {t}")
    return output, last["response"]


def strip(r):
    """A Response without what differs between two runs of one request."""
    r = json.loads(json.dumps(r))
    for k in ("id", "created_at"):
        r.pop(k)
    r["usage"]["input_tokens_details"].pop("cached_tokens")  # the prefix cache: the second run hits
    for i, o in enumerate(r["output"]):
        o["id"] = i
        if "call_id" in o:
            o["call_id"] = "call_" if o["call_id"].startswith("call_") else o["call_id"]
    return r


def delta_logprobs(events):
    """(text, the joined tokens of its logprobs) of each output_text.delta."""
    return [(e["delta"], "".join(t["token"] for t in e["logprobs"]))
            for e in events if e["type"] == "response.output_text.delta"]


def check_stream_logprobs(srv):
    """include's logprobs streamed: each output_text.delta carries its tokens' (all of them
    in order over the deltas), the done events none (as vLLM's), response.completed the whole
    reply's."""
    body = {"input": "Hi", "max_output_tokens": 6, "ignore_eos": True, "top_logprobs": 2,
            "include": ["message.output_text.logprobs"]}
    whole = post(srv, RESP, dict(GREEDY, **body))
    events = sse(srv, body)
    _, final = replay(events)
    want = items(whole, "message")[0]["content"][0]["logprobs"]
    deltas = [t for e in events if e["type"] == "response.output_text.delta" for t in e["logprobs"]]
    done = [e["logprobs"] for e in events if e["type"] == "response.output_text.done"]
    parts = [e["part"]["logprobs"] for e in events if e["type"].startswith("response.content_part.")]
    if strip(final) != strip(whole) or len(want) != 6 or deltas != want or done != [[]] or parts != [[], []]:
        fail(f"streamed logprobs: deltas {deltas}\n done {done}\n parts {parts}\n whole {want}")
    if any(text != tokens for text, tokens in delta_logprobs(events)):
        fail(f"a delta's logprobs are not its text's tokens: {delta_logprobs(events)}")
    print("ok include's logprobs streamed: each delta its tokens', all of them the whole reply's")


def check_stream_logprobs_thinking(srv):
    """A reply whose think block closes inside one engine event (K tokens a replay, </think>
    pushed by logit_bias): its deltas carry the content's tokens only, each delta's joining
    to its text; the final response the whole reply's."""
    for seed in range(20):
        body = {"input": "Hi", "max_output_tokens": 16, "temperature": 1.0, "seed": seed,
                "logit_bias": {"151668": 12}, "include": ["message.output_text.logprobs"]}
        events = sse(srv, body)
        _, final = replay(events)
        pairs = delta_logprobs(events)
        if not pairs:
            continue
        whole = post(srv, RESP, body)
        if any(text != tokens for text, tokens in pairs) or strip(final) != strip(whole):
            fail(f"seed {seed}: deltas and their tokens {pairs}, or the final response not the whole")
        print(f"ok a thinking reply's streamed logprobs (seed {seed}): each delta its own tokens'")
        return
    fail("no seed gave a reply that thinks and then answers")


def check_stream(a):
    with Server(a) as srv:
        for what, rbody, _ in cases():
            whole = post(srv, RESP, dict(GREEDY, **rbody))
            events = sse(srv, rbody)
            output, final = replay(events)
            if [o["id"] for o in output] != [o["id"] for o in final["output"]] or \
                    strip(dict(final, output=output)) != strip(final):
                fail(f"{what}: the streamed items {output} != the final response's {final['output']}")
            if strip(final) != strip(whole):
                fail(f"{what}: streamed {json.dumps(strip(final)['output'])}\n  != whole {json.dumps(strip(whole)['output'])}")
            print(f"ok {what}: {len(events)} events, the final response the whole reply's")
        check_stream_logprobs(srv)
    with tempfile.TemporaryDirectory() as d, Server(template_model(a, d, "qwen3-thinking-2507.jinja")) as srv:
        body = {"input": "Hi", "max_output_tokens": 4}
        whole = post(srv, RESP, dict(GREEDY, **body))
        output, final = replay(sse(srv, body))
        if strip(final) != strip(whole) or [o["type"] for o in output] != ["reasoning", "message"]:
            fail(f"a reply that thinks, streamed: {output} / {final} != {whole}")
        print("ok a reply that thinks, streamed: a reasoning item, then the (empty) message")
        check_stream_logprobs_thinking(srv)


def check_errors(a):
    base = {"input": "Hi", "max_output_tokens": 4}
    with Server(a) as srv:
        for fields, status, param in [
            ({"input": None}, 400, "input"),
            ({"input": 5}, 400, "input"),
            ({"input": []}, 400, "input"),
            ({"input": [{"type": "item_reference", "id": "msg_1"}]}, 400, "input[0]"),
            ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, 400,
             "input[0].content[0]"),
            ({"input": [{"role": "robot", "content": "x"}]}, 400, "input[0].role"),
            ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, 400, "input[0].call_id"),
            ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]}, 400,
             "input[0].arguments"),
            # the chat parser's names, back as the Responses fields (instructions shift the messages)
            ({"instructions": "s", "input": [{"role": "user", "content": "x"}, {
                "type": "function_call", "call_id": "c", "name": "bad name", "arguments": "{}"}]}, 400, "input[1].name"),
            ({"instructions": "s", "input": [{"role": "user", "content": "x"},
                                             {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "t"}]},
                                             {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                                             {"type": "function_call", "call_id": "d", "name": "bad name",
                                              "arguments": "{}"}]}, 400, "input[3].name"),
            ({"max_output_tokens": 100000000}, 400, "input"),  # refused after parsing: the context's length
            ({"text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}}},
              "tools": [flat(TIME)], "tool_choice": "required"}, 400, "text.format.schema"),
            ({"instructions": 3}, 400, "instructions"),
            ({"tools": [{"type": "web_search"}]}, 400, "tools[0]"),
            ({"tools": [{"type": "function", "name": "bad name"}]}, 400, "tools[0].name"),
            ({"tools": [flat(TIME)], "tool_choice": {"type": "function", "name": "nope"}}, 400, "tool_choice.name"),
            ({"tools": [flat(TIME)], "tool_choice": {"type": "file_search"}}, 400, "tool_choice"),
            ({"text": {"format": {"type": "json_schema", "name": "x", "schema": 5}}}, 400, "text.format.schema"),
            ({"text": {"format": {"type": "xml"}}}, 400, "text.format.type"),
            ({"max_output_tokens": -1}, 400, "max_output_tokens"),
            ({"include": ["everything"]}, 400, "include"),
            ({"top_logprobs": 21, "include": ["message.output_text.logprobs"]}, 400, "top_logprobs"),
            ({"background": True}, 400, "background"),
            ({"previous_response_id": "resp_123"}, 404, "previous_response_id"),
            ({"model": "other-model"}, 404, "model"),
        ]:
            body = {k: v for k, v in dict(base, **fields).items() if v is not None}
            code, _, data = srv.request("POST", RESP, body)
            err = json.loads(data).get("error") or {}
            if code != status or err.get("param") != param or not err.get("message"):
                fail(f"{fields}: {code} {err}, want {status} naming {param!r}")
        code, _, data = srv.request("GET", "/v1/responses/resp_123")
        if code != 404 or "resp_123" not in json.loads(data)["error"]["message"]:
            fail(f"GET /v1/responses/resp_123: {code} {data[:200]}")
        print("ok the 4xx of bad Responses requests name their field; no response is kept (404)")
        plain = post(srv, RESP, dict(GREEDY, **base))
        odd = post(srv, RESP, dict(GREEDY, foo=1, store=True, metadata={"k": "v"}, **base))
        if message_text(odd) != message_text(plain) or odd["metadata"] != {"k": "v"} or odd["store"] is not False:
            fail(f"unknown field or metadata: {odd} vs {plain}")
        srv.wait_idle()
    warnings = [line for line in srv.stderr.splitlines() if "ignored" in line]
    if len(warnings) != 1 or "/v1/responses" not in warnings[0] or "'foo'" not in warnings[0]:
        fail(f"one warning naming 'foo' expected on stderr: {warnings}")
    print("ok an unknown field: answered as without it, named in one warning; metadata repeated, store false")
    with server_with_env(a, "ENCORE_FAULT_STEPS", "2") as srv:  # the engine's next 2 steps fail
        code, _, data = srv.request("POST", RESP, base)
        if code != 500 or "failed in the engine" not in json.loads(data)["error"]["message"]:
            fail(f"a failed step: {code} {data[:300]}")
        status, _, data = srv.request("POST", RESP, dict(base, stream=True))
        frames = data.decode()[:-2].split("\n\n")
        last = frames[-1].split("\n")
        err = json.loads(last[1][len("data: "):]) if len(last) == 2 else {}
        if (status != 200 or last[0] != "event: error" or err.get("type") != "error"
                or err.get("sequence_number") != len(frames) - 1 or "failed in the engine" not in err.get("message", "")):
            fail(f"a stream ended by a failed step: {data[-400:]!r}")
    print("ok a failed step: a 500, and a stream's last event the numbered error event")


if __name__ == "__main__":
    run_check(__doc__, globals())
