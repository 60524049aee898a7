#!/usr/bin/env python3
"""server_e2e.py - end-to-end checks of `encore serve` over real HTTP.

Each check is one ctest test: `server_e2e.py --encore BIN --models DIR CHECK`.
Every check starts its own server on 127.0.0.1 with --port 0 (the port is read
from the line it prints), talks to it with http.client, raw sockets or curl,
and stops it with SIGTERM (it must exit 0). Nothing waits without a deadline.

  sse          raw SSE framing (curl -N): "data: JSON" events separated by blank
               lines, "data: [DONE]" last, include_usage's usage chunk (the
               chunks before it with "usage": null); the
               streamed text equals the whole reply's (greedy), and for n = 3
               with a seed each indexed stream equals its choice; completions'
               text_offset counts characters, whole and streamed; echo with
               logprobs gives the prompt's tokens first, each with the logprob
               and alternatives of the same token generated after those before
               it; include_stop_str_in_output keeps a matched stop string
  batch        a batch of prompts in /v1/completions (strings, token-id arrays, both):
               n choices per prompt, choice p * n + j the j-th of prompt p, each
               equal to that prompt sent alone (greedy; with a seed, the
               prompt alone with the seed); usage sums the prompts once
               and every choice; streamed, each index reassembles to the whole
               reply's choice and finishes once; echo with logprobs gives each
               choice its own prompt's; an empty batch or item, an item of
               another type, one too long or outside the vocabulary (nothing
               submitted), more than 256 prompts and /tokenize of a batch: 400
               naming the item
  endpoints    /health, /v1/models, /v1/models/{id}, HEAD on the GET routes,
               /metrics (Prometheus text), /tokenize and /detokenize round
               trip, chat_template_kwargs.enable_thinking, add_generation_prompt
               and continue_final_message
  errors       malformed requests (bad JSON, wrong types, unknown model, negative
               max_tokens, huge body, invalid UTF-8, prompt too long, unknown
               route, wrong method with its Allow header) get a 4xx and OpenAI's
               error object; --api-key is enforced; the server stays healthy
  early        refused before the body is read: a request that sends only its
               headers (a wrong API key, an unknown route, a wrong method, a
               Content-Length over --max-body-bytes, a Content-Type other than
               application/json, a foreign Host) gets its error at once
  hosts        bound to 127.0.0.1, a Host other than localhost, 127.0.0.1 or
               [::1] gets 421 unless --allowed-hosts names it ('*': any);
               application/json with a charset parameter is accepted
  failures     ENCORE_FAULT_STEPS=3 makes the engine's first three steps fail:
               each request they end gets 500 (a stream, an SSE error event),
               /health says 503 after them and /metrics counts them; the next
               request succeeds and /health is 200 again
  oom          ENCORE_FAULT_FINAL_COPIES=2 makes the copies of two requests' last
               outputs fail as out of memory would: each of those non-streamed
               replies is a 500 at once (not a wait for the lost output, which
               hung before), n = 3 and a batch of prompts included; afterwards
               nothing runs, every KV block is free, and the next request works
  special      a message (and a tool's description) holding "<|im_start|>" and
               "<|im_end|>": by default they are special tokens (as Hugging Face
               and vLLM tokenize them); with --no-special-tokens-in-content they
               are text and only the template's own special tokens remain; chat's
               prompt_tokens agree
  keepalive    --timeout 1 with every engine step 2.5 s long (ENCORE_STEP_DELAY_MS):
               a stream silent for longer than the timeout still completes, the
               wait filled with SSE comments (": keep-alive") that a parser
               following the SSE spec skips
  limits       per-request memory bounds, each a 400 naming the field: /detokenize
               and /tokenize ids past max_model_len, /tokenize text past 32 bytes
               per token of it, a stop string over 1 KiB, n x max_tokens x
               top_logprobs over 2^20 (summed over a batch's prompts); /tokenize
               counts in --max-queue (503)
  fairness     --max-queue-per-client 1: a second request from 127.0.0.1 while
               one runs gets 429 with Retry-After, one from 127.0.0.2 is admitted;
               with --api-key every key holder is one client; the default is half
               of --max-queue; --max-tokens-default caps a missing max_tokens; a
               batch counts its prompts x n choices
  queue        --max-queue 1: a second request while one runs gets 503 with
               Retry-After; afterwards requests are admitted again
  disconnect   a streaming client that goes away mid-stream (and one whose
               request is still waiting) gets its request aborted: /metrics
               shows no running request and every KV block free; a batch's
               client going away (streamed or not) aborts every prompt's
               request, running or waiting; SIGTERM with a stream open ends it
               and exits 0
  concurrency  32 streaming clients at once, every fourth disconnecting after
               its first chunks; afterwards every block is free and each
               completed request's text equals that prompt run alone
  args         bad flags exit 2, an unusable address or model exits 1, both
               with a one-line reason
  tools        tool calling: /tokenize of a conversation with tools, calls (arguments
               as JSON strings) and tool results equals the ids of the model's own
               template rendered by Jinja2 (tests/tokenizer/render_chat.py) with the
               arguments parsed, as vLLM passes them; tool_choice "none" shows the
               tools too; chat with tools answers (stream and not); every malformed
               tools, tool_choice, tool_calls or tool_call_id is a 400 naming it,
               and "required" or a named function is a 400 (not enforced yet)
  fields       request fields of OpenAI's API and vLLM's extensions that change the
               result, each done as vLLM does or refused with a 400 naming it: suffix
               (refused; null and "" answered as without); truncate_prompt_tokens k (the
               reply and usage of the prompt's last k ids from /tokenize sent as the
               prompt; echo, a batch, chat; -1; the 400s); continuous_usage_stats (every
               chunk's usage its choice's so far, growing by the tokens the chunk carries,
               the sum the final usage, whole and streamed alike); echo with max_tokens 0
               (the prompt's text, with logprobs those of max_tokens 1 before its token);
               return_tokens_as_token_ids ("token_id:N", the echoed N /tokenize's ids,
               each N's /detokenize the token given without it); best_of (the n shown the
               candidates of n = best_of with the highest cumulative logprobs, usage
               counting all, a batch, the 400s); allowed_token_ids (every token among them,
               greedy the best-scored of them, with guided_choice both masks); bad_words
               and prompt_logprobs null or [] (answered), prompt_logprobs in a stream or
               above 20 (400s); parallel_tool_calls false (the
               first of several calls "required" made, whole and streamed); an unknown field (answered as
               without it; one warning per such request on the server's stderr, naming it)
  prompt_logprobs  vLLM's prompt_logprobs: each prompt token's logprob, rank and
               alternatives against `encore logits`' whole rows, completions per choice
               (a batch of two prompts, n 2), chat at the top, the same again (no
               prefix cache) and in an echo's logprobs
  bad_words    vLLM's bad_words: a one-token word never generated, nor its spelling
               with a leading space, the greedy reply unchanged before; a two-token
               word's first token still comes, its second never after it; chat; the
               400s
  openai       the official `openai` npm package (tests/openai_client.mjs):
               completions, chat, streaming, n > 1, a batch of prompts, stop
               strings, errors
  openai_logprobs  the same client: logprobs of completions and chat
  openai_tools the same client: tools with tool_choice auto and none, the stream
               assembled by its ChatCompletionStream equal to the whole reply, a turn
               after two calls and their results, the 400s with their param
  openai_responses the same client: client.responses.create (output_text), a
               stream through client.responses.stream (its accumulator checks every
               event) equal to the whole reply, a named tool's function_call and
               the turn after its output, previous_response_id's 404
  openai_keepalive the same client: a chat stream whose tokens come after
               --timeout 1 (ENCORE_STEP_DELAY_MS=2500) skips the keep-alive comments
"""
import argparse
import http.client
import heapq
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MODEL = "tiny-qwen3vocab"
DEADLINE_S = 240  # the whole check


SERVERS = []  # killed if the deadline passes


def fail(msg):
    sys.exit("FAIL: " + msg)


def deadline_passed():
    for p in SERVERS:
        p.kill()
    print(f"FAIL: the check ran past {DEADLINE_S} s", flush=True)
    os._exit(3)


class Server:
    """`encore serve` on a free port, stopped (and checked) on exit."""

    def __init__(self, a, *extra):
        self.args = [a.encore, "serve", "-m", os.path.join(a.models, MODEL), "--port", "0",
                     "--max-num-seqs", "16"] + list(extra)
        self.p = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        SERVERS.append(self.p)
        line = ""
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line or "listening on" in line:
                break
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.p.kill()
            fail(f"server did not start: {line!r} {self.p.stderr.read()}")
        self.port = int(m.group(1))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("server did not stop within 60 s of SIGTERM")
        err = self.p.stderr.read()
        self.stderr = err  # what the server logged, for the checks that read it
        if exc[0] is None and rc != 0:
            fail(f"server exited {rc}: {err}")

    def request(self, method, path, body=None, headers=None, timeout=120, source=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                                       source_address=(source, 0) if source else None)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def post(self, path, body, **kw):
        status, headers, data = self.request("POST", path, body, **kw)
        try:
            return status, json.loads(data), headers
        except ValueError:
            fail(f"POST {path}: not JSON ({status}): {data[:200]!r}")

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        if status != 200:
            fail(f"/metrics: {status}")
        out = {}
        for line in data.decode().splitlines():
            if line.startswith("#") or not line:
                continue
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
        return out

    def metric(self, name, labels=""):
        key = f'{name}{{model_name="{MODEL}"{labels}}}'
        return self.metrics()[key]

    def wait_idle(self, seconds=30):
        """Until no request runs or waits and every KV block is free."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            m = self.metrics()
            lab = f'{{model_name="{MODEL}"}}'
            if (m["encore_num_requests_running" + lab] == 0 and m["encore_num_requests_waiting" + lab] == 0
                    and m["encore_kv_cache_blocks_used" + lab] == 0):
                return m
            time.sleep(0.05)
        m = {k: v for k, v in self.metrics().items() if "_bucket" not in k}
        fail(f"not idle after {seconds} s: {m}")


def sse_events(raw):
    """The data lines of an SSE stream, checking the framing."""
    if not raw.endswith("\n\n"):
        fail(f"stream does not end with a blank line: {raw[-80:]!r}")
    events = raw[:-2].split("\n\n")
    out = []
    for ev in events:
        if not ev.startswith("data: ") or "\n" in ev:
            fail(f"bad SSE event {ev[:120]!r}")
        out.append(ev[len("data: "):])
    if out[-1] != "[DONE]" or "[DONE]" in out[:-1]:
        fail(f"stream must end with one data: [DONE], got {out[-3:]}")
    return [json.loads(e) for e in out[:-1]]


def curl_stream(srv, path, body):
    p = subprocess.run(["curl", "--noproxy", "*", "-sS", "-N", "-D", "-", "--max-time", "120",
                        "-H", "Content-Type: application/json", "-d", json.dumps(body),
                        f"http://127.0.0.1:{srv.port}{path}"], capture_output=True, timeout=150)
    if p.returncode != 0:
        fail(f"curl: {p.stderr}")
    head, _, raw = p.stdout.decode().partition("\r\n\r\n")
    if "content-type: text/event-stream" not in head.lower() or " 200 " not in head.splitlines()[0]:
        fail(f"stream headers: {head}")
    return sse_events(raw)


def check_sse(a):
    with Server(a) as srv:
        for path, body in [
            ("/v1/completions", {"prompt": "The capital of France is", "max_tokens": 12, "temperature": 0}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hello"}],
                                      "max_tokens": 12, "temperature": 0}),
        ]:
            status, whole, _ = srv.post(path, body)
            if status != 200:
                fail(f"{path}: {status} {whole}")
            chunks = curl_stream(srv, path, dict(body, stream=True, stream_options={"include_usage": True}))
            chat = "chat" in path
            usage = chunks[-1]
            if usage.get("choices") != [] or usage["usage"] != whole["usage"]:
                fail(f"{path}: usage chunk {usage} != {whole['usage']}")
            if any("usage" not in c or c["usage"] is not None for c in chunks[:-1]):
                fail(f"{path}: with include_usage, a chunk before the last lacks \"usage\": null")
            text, finish = "", None
            for c in chunks[:-1]:
                if c["id"] != chunks[0]["id"] or c["object"] != ("chat.completion.chunk" if chat else "text_completion"):
                    fail(f"{path}: chunk {c}")
                ch = c["choices"][0]
                text += (ch["delta"].get("content") or "") if chat else ch["text"]
                finish = ch["finish_reason"] or finish
            if chat and chunks[0]["choices"][0]["delta"].get("role") != "assistant":
                fail(f"first chat chunk has no role: {chunks[0]}")
            want = whole["choices"][0]["message"]["content"] if chat else whole["choices"][0]["text"]
            if text != want or finish != whole["choices"][0]["finish_reason"]:
                fail(f"{path}: streamed {text!r} ({finish}) != whole {want!r}")
            print(f"ok {path}: {len(chunks)} SSE events, [DONE] last, text {text!r} == the whole reply's")
            # without stream_options, or with include_usage false, there is no usage chunk; given,
            # stream_options' include_usage defaults to true (vLLM's StreamOptions)
            for opts in (None, {"include_usage": False}):
                chunks = curl_stream(srv, path, dict(body, stream=True, **({"stream_options": opts} if opts else {})))
                if any("usage" in c for c in chunks):
                    fail(f"{path}: usage chunk with stream_options {opts}")
            chunks = curl_stream(srv, path, dict(body, stream=True, stream_options={}))
            if chunks[-1].get("choices") != [] or chunks[-1].get("usage") != whole["usage"]:
                fail(f"{path}: stream_options {{}}: no usage chunk last: {chunks[-1]}")
            # n = 3 sampled with a seed: indexed choices, each equal to the whole reply's
            body = dict(body, n=3, seed=7, temperature=1.0)
            status, whole, _ = srv.post(path, body)
            chunks = curl_stream(srv, path, dict(body, stream=True))
            texts, finishes = ["", "", ""], [None] * 3
            for c in chunks:
                for ch in c["choices"]:
                    i = ch["index"]
                    texts[i] += (ch["delta"].get("content") or "") if chat else ch["text"]
                    finishes[i] = ch["finish_reason"] or finishes[i]
            want = [ch["message"]["content"] if chat else ch["text"] for ch in whole["choices"]]
            if status != 200 or texts != want or None in finishes or len(set(want)) < 2:
                fail(f"{path} n=3: streamed {texts} {finishes} != whole {want}")
            print(f"ok {path} n=3 with a seed: 3 indexed streams equal the whole reply's 3 choices")
        check_text_offsets(srv)


def check_text_offsets(srv):
    """/v1/completions logprobs: text_offset counts characters (Python's len, as OpenAI and vLLM
    do), whole and streamed; echo with logprobs is refused (no prompt logprobs)."""
    body = {"prompt": "Hello", "max_tokens": 24, "temperature": 0, "logprobs": 1}
    status, whole, _ = srv.post("/v1/completions", body)
    lp = whole["choices"][0]["logprobs"]
    want = [sum(len(t) for t in lp["tokens"][:i]) for i in range(len(lp["tokens"]))]
    if status != 200 or lp["text_offset"] != want:
        fail(f"text_offset {lp['text_offset']} != the characters before each token {want}: {lp['tokens']}")
    if all(len(t) == len(t.encode()) for t in lp["tokens"]):
        fail(f"no token of more than one byte per character to tell characters from bytes: {lp['tokens']}")
    offsets = []
    for c in curl_stream(srv, "/v1/completions", dict(body, stream=True)):
        offsets += c["choices"][0]["logprobs"]["text_offset"] if c["choices"][0]["logprobs"] else []
    if offsets != want:
        fail(f"streamed text_offset {offsets} != {want}")
    print(f"ok: text_offset in characters, whole and streamed: {want} for {lp['tokens']}")
    check_echo_logprobs(srv)
    check_include_stop(srv)
    check_top_logprobs_zero(srv)
    check_top_logprobs_chosen(srv)
    check_completion_max_tokens(srv)


def check_completion_max_tokens(srv):
    """/v1/completions without max_tokens generates 16 tokens (OpenAI's and vLLM's default), not the
    rest of the context; a given max_tokens is kept."""
    body = {"prompt": "Hello", "ignore_eos": True, "temperature": 0}
    for extra, want in (({}, 16), ({"max_tokens": 21}, 21)):
        status, r, _ = srv.post("/v1/completions", dict(body, **extra))
        if status != 200 or r["usage"]["completion_tokens"] != want:
            fail(f"completions {extra or 'without max_tokens'}: {status} {r.get('usage')} (want {want})")
    # a min_tokens above what the context leaves a max_tokens of null: 400, as vLLM checks the
    # max it derives
    expect_error(srv, 400, "POST", "/v1/completions", dict(body, max_tokens=None, min_tokens=100000),
                 "min_tokens", "what the context leaves")
    print("ok: completions without max_tokens: 16 tokens; max_tokens 21: 21; min_tokens past the "
          "context: 400")


def check_top_logprobs_chosen(srv):
    """completions with logprobs N: each top_logprobs object holds the chosen token too, so up to
    N + 1 entries (OpenAI's rule, vLLM's answer), here a token forced by logit_bias that the raw
    model does not rank first, beside the raw top 1."""
    status, tok, _ = srv.post("/tokenize", {"prompt": " Paris"})
    forced = tok["tokens"][0]
    body = {"prompt": "Hello", "max_tokens": 3, "temperature": 0, "logprobs": 1,
            "logit_bias": {str(forced): 100}}
    status, r, _ = srv.post("/v1/completions", body)
    lp = r["choices"][0]["logprobs"]
    if status != 200 or len(lp["tokens"]) != 3:
        fail(f"logprobs 1 with a forced token: {status} {r}")
    for t, p, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        best = max(top.values())
        if top.get(t) != p or len(top) != 2 or best <= p:
            fail(f"logprobs 1: top_logprobs {top} lacks the chosen {t!r} ({p}) beside a better one")
    print(f"ok: logprobs 1: the chosen token beside the raw top 1 in each of {lp['top_logprobs']}")


def check_top_logprobs_zero(srv):
    """completions with logprobs 0: each top_logprobs entry the chosen token alone, as vLLM answers
    (the distinct keys of alternatives that decode alike: test_server_unit)."""
    body = {"prompt": "Hello", "max_tokens": 4, "temperature": 0, "logprobs": 0}
    status, r, _ = srv.post("/v1/completions", body)
    lp = r["choices"][0]["logprobs"]
    want = [{t: p} for t, p in zip(lp["tokens"], lp["token_logprobs"])]
    if status != 200 or lp["top_logprobs"] != want or len(want) != 4:
        fail(f"logprobs 0: top_logprobs {lp['top_logprobs']} != the chosen tokens {want}")
    print(f"ok: logprobs 0: top_logprobs the chosen tokens alone: {want}")


def check_include_stop(srv):
    """A stop string cuts the text before it; with include_stop_str_in_output (vLLM's) the string
    stays, and nothing after it (completions and chat)."""
    body = {"prompt": "The capital of France is", "max_tokens": 16, "temperature": 0, "ignore_eos": True}
    status, whole, _ = srv.post("/v1/completions", body)
    text = whole["choices"][0]["text"]
    stop = text[len(text) // 2:len(text) // 2 + 2]
    cut = text[:text.index(stop)]
    for flag, want in ((False, cut), (True, cut + stop)):
        status, r, _ = srv.post("/v1/completions", dict(body, stop=[stop], include_stop_str_in_output=flag))
        ch = r["choices"][0]
        if status != 200 or ch["text"] != want or ch["finish_reason"] != "stop" or ch["stop_reason"] != stop:
            fail(f"stop {stop!r}, include_stop_str_in_output {flag}: {ch} (want {want!r})")
    msgs = [{"role": "user", "content": "Hi"}]
    chat = {"messages": msgs, "max_tokens": 16, "temperature": 0, "ignore_eos": True,
            "chat_template_kwargs": {"enable_thinking": False}}
    status, r, _ = srv.post("/v1/chat/completions", chat)
    content = r["choices"][0]["message"]["content"]
    stop = content[len(content) // 2:len(content) // 2 + 2]
    status, r, _ = srv.post("/v1/chat/completions", dict(chat, stop=[stop], include_stop_str_in_output=True))
    if status != 200 or r["choices"][0]["message"]["content"] != content[:content.index(stop)] + stop:
        fail(f"chat stop {stop!r} with include_stop_str_in_output: {r}")
    print(f"ok: stop {stop!r} cuts before it, include_stop_str_in_output keeps it (completions, chat)")
    # a stop token id: its text goes only with include_stop_str_in_output (vLLM's detokenizer)
    status, named, _ = srv.post("/v1/completions", dict(body, logprobs=0, return_tokens_as_token_ids=True))
    ids = [int(t.split(":")[1]) for t in named["choices"][0]["logprobs"]["tokens"]]
    stop_id = ids[3]
    k = ids.index(stop_id)
    head = srv.post("/detokenize", {"tokens": ids[:k]})[1]["prompt"]
    upto = srv.post("/detokenize", {"tokens": ids[:k + 1]})[1]["prompt"]
    for flag, want in ((False, head), (True, upto)):
        status, r, _ = srv.post("/v1/completions", dict(body, stop_token_ids=[stop_id],
                                                         include_stop_str_in_output=flag))
        ch = r["choices"][0]
        if status != 200 or ch["text"] != want or ch["stop_reason"] != stop_id or head == upto:
            fail(f"stop id {stop_id}, include_stop_str_in_output {flag}: {ch} (want {want!r})")
    print(f"ok: a stop token id's text only with include_stop_str_in_output")


def check_echo_logprobs(srv):
    """echo with logprobs: the prompt's tokens first (logprob and alternatives null for the first),
    each prompt token's logprob and alternatives those of the same token generated after the
    tokens before it (forced by logit_bias; logprobs are the raw distribution's), offsets in
    characters from the echoed text's start; streamed, the same entries."""
    text = "The capital of France is"
    status, tok, _ = srv.post("/tokenize", {"prompt": text})
    ids = tok["tokens"]
    body = {"prompt": text, "max_tokens": 2, "temperature": 0, "logprobs": 2, "echo": True}
    status, whole, _ = srv.post("/v1/completions", body)
    if status != 200:
        fail(f"echo with logprobs: {status} {whole}")
    ch = whole["choices"][0]
    lp = ch["logprobs"]
    n = len(ids)
    if len(lp["tokens"]) != n + 2 or "".join(lp["tokens"][:n]) != text or not ch["text"].startswith(text):
        fail(f"echo: tokens {lp['tokens']} do not begin with the prompt's {n} ({ch['text']!r})")
    if lp["token_logprobs"][0] is not None or lp["top_logprobs"][0] is not None:
        fail(f"echo: the first prompt token has a logprob: {lp['token_logprobs'][0]}, {lp['top_logprobs'][0]}")
    want = [sum(len(t) for t in lp["tokens"][:i]) for i in range(len(lp["tokens"]))]
    if lp["text_offset"] != want:
        fail(f"echo: text_offset {lp['text_offset']} != {want}")
    worst = 0.0
    for k in range(1, n):
        status, one, _ = srv.post("/v1/completions", {
            "prompt": ids[:k], "max_tokens": 1, "temperature": 0, "logprobs": 2,
            "logit_bias": {str(ids[k]): 100}})
        got = one["choices"][0]["logprobs"]
        if status != 200 or got["tokens"][0] != lp["tokens"][k]:
            fail(f"echo: forcing prompt token {k}: {status} {one}")
        worst = max(worst, abs(got["token_logprobs"][0] - lp["token_logprobs"][k]))
        alt, ref = got["top_logprobs"][0], lp["top_logprobs"][k]
        if sorted(alt) != sorted(ref) or any(abs(alt[t] - ref[t]) > 1e-6 for t in alt):
            fail(f"echo: prompt token {k}'s alternatives {ref} != {alt} when generated")
    if worst > 1e-6:
        fail(f"echo: prompt logprobs differ from the same tokens generated by {worst}")
    streamed = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for c in curl_stream(srv, "/v1/completions", dict(body, stream=True)):
        for key in streamed:
            streamed[key] += (c["choices"][0]["logprobs"] or {}).get(key, [])
    if streamed != lp:
        fail(f"echo streamed {streamed} != whole {lp}")
    print(f"ok: echo with logprobs: {n} prompt tokens (the first null) within {worst:.2g} of the same "
          "tokens generated, alternatives equal, offsets in characters, streamed the same")


def finished_requests(srv):
    """Requests the engine finished, for any reason, and the prompt tokens it computed."""
    srv.wait_idle()
    m = srv.metrics()
    return (sum(v for k, v in m.items() if k.startswith("encore_request_success_total{")),
            m['encore_prompt_tokens_total{model_name="%s"}' % MODEL])


def choice_key(c):
    return c["index"], c["text"], c["finish_reason"], c["stop_reason"], c["logprobs"]


def check_batch(a):
    comp = "/v1/completions"
    prompts = ["The capital of France is", "Once upon a time", "Hello"]
    with Server(a, "--max-model-len", "256") as srv:
        ids = [srv.post("/tokenize", {"prompt": p})[1]["tokens"] for p in prompts]
        # each prompt alone (n = 2, greedy), then the three as one batch: choice 2p + j is the
        # alone reply's choice j
        base = {"max_tokens": 8, "temperature": 0, "n": 2, "ignore_eos": True}
        alone = []
        for p in prompts:
            status, r, _ = srv.post(comp, dict(base, prompt=p))
            if status != 200:
                fail(f"{p!r} alone: {status} {r}")
            alone.append(r)
        texts = [r["choices"][0]["text"] for r in alone]
        if len(set(texts)) != 3:
            fail(f"the prompts' greedy texts must differ to tell the choices apart: {texts}")
        want = [choice_key(dict(alone[p]["choices"][j], index=2 * p + j)) for p in range(3) for j in range(2)]
        usage = {k: sum(r["usage"][k] for r in alone) for k in ("prompt_tokens", "completion_tokens",
                                                               "total_tokens")}
        # each prompt counted once, every choice's 8 tokens (as vLLM sums them)
        if usage != {"prompt_tokens": sum(map(len, ids)), "completion_tokens": 6 * 8,
                     "total_tokens": sum(map(len, ids)) + 6 * 8}:
            fail(f"usage of the prompts alone {usage}: not each prompt's /tokenize count once, 8 per choice")
        for form, prompt in [("strings", prompts), ("token ids", ids), ("both", [prompts[0], ids[1], prompts[2]])]:
            status, r, _ = srv.post(comp, dict(base, prompt=prompt))
            got = [choice_key(c) for c in r.get("choices", [])]
            if status != 200 or got != want:
                fail(f"a batch of 3 ({form}), n = 2: {status} {got} != alone {want}")
            if {k: r["usage"][k] for k in usage} != usage:
                fail(f"batch ({form}) usage {r['usage']} != the sums alone {usage}")
            print(f"ok batch of 3 ({form}) x n 2: 6 choices in index order, each the prompt's alone; "
                  f"usage {usage}")
        whole = r
        # streamed: each index reassembles to its choice and finishes once; the usage chunk last
        chunks = curl_stream(srv, comp, dict(base, prompt=prompts, stream=True,
                                             stream_options={"include_usage": True}))
        got, finishes = [""] * 6, [[] for _ in range(6)]
        for c in chunks[:-1]:
            for ch in c["choices"]:
                got[ch["index"]] += ch["text"]
                if ch["finish_reason"]:
                    finishes[ch["index"]].append(ch["finish_reason"])
        if got != [c["text"] for c in whole["choices"]] or \
                finishes != [[c["finish_reason"]] for c in whole["choices"]]:
            fail(f"streamed batch: {got} {finishes} != whole {whole['choices']}")
        if chunks[-1]["choices"] != [] or {k: chunks[-1]["usage"][k] for k in usage} != usage:
            fail(f"streamed batch: usage chunk {chunks[-1]} != {usage}")
        print("ok streamed batch: each index's text is the whole reply's, one finish_reason each, usage summed")
        check_batch_echo(srv, prompts, ids)
        check_batch_seed(srv, prompts)
        check_batch_errors(srv)


def check_batch_echo(srv, prompts, ids):
    """echo with logprobs: each choice its own prompt's tokens and logprobs, equal to the prompt's
    alone (streamed, the same); echo of token ids gives the text they spell."""
    comp = "/v1/completions"
    base = {"max_tokens": 2, "temperature": 0, "echo": True, "logprobs": 2, "n": 2}
    want = []
    for p in prompts:
        status, r, _ = srv.post(comp, dict(base, prompt=p))
        want += [dict(c, index=len(want) + j) for j, c in enumerate(r["choices"])]
    if len({c["logprobs"]["tokens"][0] for c in want}) != 3:
        fail(f"the prompts' first tokens should differ: {[c['logprobs']['tokens'][:2] for c in want]}")
    status, r, _ = srv.post(comp, dict(base, prompt=prompts))
    if status != 200 or [choice_key(c) for c in r["choices"]] != [choice_key(c) for c in want]:
        fail(f"batch echo with logprobs: {status} {r} != alone {want}")
    streamed = [{"text": "", "tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
                for _ in range(6)]
    for c in curl_stream(srv, comp, dict(base, prompt=prompts, stream=True)):
        for ch in c["choices"]:
            s = streamed[ch["index"]]
            s["text"] += ch["text"]
            for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
                s[key] += (ch["logprobs"] or {}).get(key, [])
    if streamed != [dict(c["logprobs"], text=c["text"]) for c in want]:
        fail(f"streamed batch echo with logprobs: {streamed} != {want}")
    status, r, _ = srv.post(comp, {"prompt": ids, "max_tokens": 1, "echo": True, "temperature": 0})
    if status != 200 or [c["text"][:len(p)] for c, p in zip(r["choices"], prompts)] != prompts:
        fail(f"batch of token ids with echo: {status} {r}")
    print("ok batch echo with logprobs: each choice its own prompt's logprobs (whole and streamed), "
          "token ids echoed as their text")


def check_batch_seed(srv, prompts):
    """With a seed, each prompt of a batch is the prompt alone with that seed (vLLM gives every
    prompt the request's parameters; choice j takes seed + j), so a prompt given twice gives the
    same texts twice; the same batch again gives the same texts."""
    comp = "/v1/completions"
    body = {"prompt": [prompts[0], prompts[1], prompts[0]], "n": 2, "seed": 7, "temperature": 1.0,
            "max_tokens": 8}
    status, r, _ = srv.post(comp, body)
    _, again, _ = srv.post(comp, body)
    texts = [c["text"] for c in r["choices"]]
    if status != 200 or texts != [c["text"] for c in again["choices"]] or len(set(texts)) < 4:
        fail(f"a seeded batch is not reproducible or its choices share seeds: {texts}, "
             f"{[c['text'] for c in again['choices']]}")
    for p in range(3):
        _, one, _ = srv.post(comp, dict(body, prompt=body["prompt"][p]))
        if [c["text"] for c in one["choices"]] != texts[2 * p:2 * p + 2]:
            fail(f"seeded batch prompt {p}: {texts[2 * p:2 * p + 2]} != alone with seed 7: {one}")
    print(f"ok seeded batch: reproducible, each prompt as alone with the seed ({texts})")


def check_batch_errors(srv):
    """400s naming the item; when one item is refused, no prompt of the batch was submitted."""
    comp = "/v1/completions"
    for body, needles in [
        ({"prompt": []}, ["'prompt' is empty"]),
        ({"prompt": ["a", ""]}, ["'prompt' item 1", "empty"]),
        ({"prompt": [[1], [2], []]}, ["'prompt' item 2 is empty"]),
        ({"prompt": ["a", 5]}, ["'prompt' item 1 must be a string or an array of token ids"]),
        ({"prompt": ["a", ["b"]]}, ["'prompt' item 1 must be a string or an array of token ids"]),
        ({"prompt": ["x"] * 257}, ["at most 256"]),
        ({"prompt": ["hi", "word " * 300], "max_tokens": 8}, ["'prompt' item 1", "maximum context length"]),
        ({"prompt": ["hi", "hi", "word " * 100], "max_tokens": 200}, ["'prompt' item 2", "you requested"]),
        ({"prompt": [[1, 2], [1, 999999999]]}, ["'prompt' item 1", "vocabulary"]),
    ]:
        before = finished_requests(srv)
        expect_error(srv, 400, "POST", comp, dict(body, max_tokens=body.get("max_tokens", 4)), "prompt",
                     *needles)
        if finished_requests(srv) != before:
            fail(f"{str(body)[:80]}: refused, yet requests ran: {before} -> {finished_requests(srv)}")
    expect_error(srv, 400, "POST", "/tokenize", {"prompt": ["a", "b"]}, "prompt", "batch of 2")
    status, r, _ = srv.post(comp, {"prompt": ["a", "b"], "max_tokens": 2})
    if status != 200 or len(r["choices"]) != 2:
        fail(f"after the refusals: {status} {r}")
    print("ok: every refused batch named its item and ran nothing")


def check_endpoints(a):
    with Server(a, "--served-model-name", "tiny") as srv:
        status, headers, data = srv.request("GET", "/health")
        if status != 200:
            fail(f"/health: {status}")
        # vLLM's /version: the release `encore --version` prints, the project's version in CMakeLists.txt
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CMakeLists.txt")) as f:
            declared = re.search(r"project\(encore VERSION ([0-9.]+)", f.read()).group(1)
        cli = subprocess.run([a.encore, "--version"], capture_output=True, text=True, timeout=60).stdout
        status, _, data = srv.request("GET", "/version")
        if status != 200 or json.loads(data) != {"version": declared} or cli != f"encore {declared}\n":
            fail(f"/version: {status} {data!r}; encore --version {cli!r}; CMakeLists.txt {declared}")
        status, _, data = srv.request("GET", "/v1/models")
        models = json.loads(data)
        if status != 200 or models["object"] != "list" or models["data"][0]["id"] != "tiny":
            fail(f"/v1/models: {status} {models}")
        # OpenAI's retrieve model, and OpenAI's 404 for another id
        status, _, data = srv.request("GET", "/v1/models/tiny")
        if status != 200 or json.loads(data) != models["data"][0]:
            fail(f"/v1/models/tiny: {status} {data[:200]!r}, the list has {models['data'][0]}")
        expect_error(srv, 404, "GET", "/v1/models/gpt-4", None, "gpt-4", "model")
        # HEAD on every GET route: GET's status and headers, no body
        for path in ["/health", "/version", "/v1/models", "/v1/models/tiny", "/metrics"]:
            reply = raw_request(srv.port, f"HEAD {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          "Connection: close\r\n\r\n".encode())
            head, _, body = reply.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200 ") or body:
                fail(f"HEAD {path}: {reply[:300]!r}")
        print("ok: /v1/models/{id} (404 for another id), HEAD on the GET routes without a body")
        status, tok, _ = srv.post("/tokenize", {"prompt": "Hello world, hello!"})
        if status != 200 or tok["count"] != len(tok["tokens"]) or not tok["tokens"]:
            fail(f"/tokenize: {status} {tok}")
        status, detok, _ = srv.post("/detokenize", {"tokens": tok["tokens"]})
        if status != 200 or detok["prompt"] != "Hello world, hello!":
            fail(f"/detokenize: {status} {detok}")
        # vLLM's return_token_strs: the vocabulary's strings (tokenizer.json's keys), null past it
        with open(os.path.join(a.models, MODEL, "tokenizer.json"), encoding="utf-8") as f:
            vocab = json.load(f)["model"]["vocab"]
        by_id = {i: t for t, i in vocab.items()}
        status, strs, _ = srv.post("/tokenize", {"prompt": tok["tokens"] + [151935], "return_token_strs": True})
        want = [by_id[i] for i in tok["tokens"]] + [None]
        if status != 200 or strs.get("token_strs") != want or "token_strs" in tok:
            fail(f"/tokenize return_token_strs: {status} {strs} (want {want})")
        print(f"ok: /tokenize return_token_strs {want}")
        msgs = [{"role": "user", "content": "Hi"}]
        _, think, _ = srv.post("/tokenize", {"messages": msgs})
        _, nothink, _ = srv.post("/tokenize", {"messages": msgs, "chat_template_kwargs": {"enable_thinking": False}})
        _, text, _ = srv.post("/detokenize", {"tokens": nothink["tokens"]})
        if "<think>\n\n</think>" not in text["prompt"] or nothink["count"] <= think["count"]:
            fail(f"enable_thinking false: {text}")
        # the chat reply is the completion of the rendered template
        status, chat, _ = srv.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 6, "temperature": 0,
                                                           "chat_template_kwargs": {"enable_thinking": False},
                                                           "model": "tiny"})
        status2, comp, _ = srv.post("/v1/completions", {"prompt": nothink["tokens"], "max_tokens": 6,
                                                        "temperature": 0})
        if status != 200 or status2 != 200 or chat["choices"][0]["message"]["content"] != comp["choices"][0]["text"]:
            fail(f"chat != completion of its template: {chat} {comp}")
        if chat["usage"]["prompt_tokens"] != nothink["count"]:
            fail(f"chat usage {chat['usage']} vs template tokens {nothink['count']}")
        print(f"ok: health, models, tokenize/detokenize, enable_thinking, chat == template completion")
        # vLLM's add_generation_prompt and continue_final_message: the reply to a begun assistant
        # message continues it, the completion of the template cut after that message's content
        begun = msgs + [{"role": "assistant", "content": "Sure, "}]
        _, open_, _ = srv.post("/tokenize", {"messages": begun, "add_generation_prompt": False,
                                             "continue_final_message": True})
        _, closed, _ = srv.post("/tokenize", {"messages": begun, "add_generation_prompt": False})
        _, cut, _ = srv.post("/detokenize", {"tokens": open_["tokens"]})
        _, whole, _ = srv.post("/detokenize", {"tokens": closed["tokens"]})
        if not cut["prompt"].endswith("Sure,") or not whole["prompt"].startswith(cut["prompt"]) or \
                closed["count"] <= open_["count"]:
            fail(f"continue_final_message: {cut['prompt']!r} against {whole['prompt']!r}")
        status, chat, _ = srv.post("/v1/chat/completions", {"messages": begun, "max_tokens": 6, "temperature": 0,
                                                           "add_generation_prompt": False,
                                                           "continue_final_message": True})
        status2, comp, _ = srv.post("/v1/completions", {"prompt": open_["tokens"], "max_tokens": 6,
                                                        "temperature": 0})
        if status != 200 or chat["choices"][0]["message"]["content"] != comp["choices"][0]["text"]:
            fail(f"continue_final_message: chat {status} {chat} != completion {comp}")
        expect_error(srv, 400, "POST", "/v1/chat/completions",
                     {"messages": begun, "continue_final_message": True}, "continue_final_message",
                     "add_generation_prompt")
        print("ok: add_generation_prompt false and continue_final_message: the template cut after the "
              "begun reply, whose chat completion is that text's completion; both true a 400")
        # the engine thread finishes its bookkeeping of a request just after
        # the reply leaves: wait (briefly) until no request is running
        deadline = time.time() + 10
        m = srv.metrics()
        while m.get('encore_num_requests_running{model_name="tiny"}') != 0 and time.time() < deadline:
            time.sleep(0.01)
            m = srv.metrics()
        for name in ["encore_num_requests_running", "encore_num_requests_waiting", "encore_kv_cache_usage_perc",
                     "encore_prefix_cache_hit_rate", "encore_prompt_tokens_total", "encore_generation_tokens_total",
                     "encore_engine_eager_steps_total", "encore_engine_captured_steps_total",
                     "encore_time_to_first_token_seconds_count", "encore_inter_token_latency_seconds_count"]:
            key = name + '{model_name="tiny"}'
            if key not in m:
                fail(f"/metrics lacks {key}")
        if m['encore_time_to_first_token_seconds_count{model_name="tiny"}'] < 2 or \
                m['encore_generation_tokens_total{model_name="tiny"}'] < 12:
            fail(f"/metrics counts: {m}")
        if m['encore_time_to_first_token_seconds_bucket{model_name="tiny",le="+Inf"}'] != \
                m['encore_time_to_first_token_seconds_count{model_name="tiny"}']:
            fail("histogram +Inf bucket != count")
        print(f"ok: /metrics has the gauges, counters and histograms")


def expect_error(srv, status, method, path, body, *needles, headers=None, timeout=120):
    got, hdrs, data = srv.request(method, path, body, headers=headers, timeout=timeout)
    try:
        err = json.loads(data)["error"]
    except (ValueError, KeyError, TypeError):
        fail(f"{method} {path}: no error object ({got}): {data[:200]!r}")
    if got != status or not err.get("message") or "type" not in err:
        fail(f"{method} {path} {str(body)[:80]!r}: {got} {err}, expected {status}")
    for n in needles:
        if n not in err["message"] and n != err.get("param"):
            fail(f"{method} {path}: message lacks {n!r}: {err}")
    print(f"ok {got}: {err['message'][:110]}")
    return hdrs


def check_errors(a):
    # bodies over 1 MiB parse two at a time: six at once are each answered (a prompt of ids
    # longer than the model's context: 400), and a small request passes them
    with Server(a, "--max-model-len", "256") as srv:
        big = json.dumps({"prompt": [0] * 400000, "max_tokens": 1})
        got = []
        def post_big():
            status, _, data = srv.request("POST", "/v1/completions", big, timeout=120)
            got.append((status, data))
        threads = [threading.Thread(target=post_big) for _ in range(6)]
        for t in threads:
            t.start()
        status, _, _ = srv.request("GET", "/health")
        for t in threads:
            t.join()
        if status != 200 or len(got) != 6 or any(st != 400 or b"maximum context length is 256" not in d for st, d in got):
            fail(f"six large bodies at once: /health {status}, {[(st, d[:120]) for st, d in got]}")
        print(f"ok: six {len(big) >> 10} KiB bodies at once each answered 400")
    with Server(a, "--max-body-bytes", "65536", "--max-model-len", "256") as srv:
        comp = "/v1/completions"
        chat = "/v1/chat/completions"
        expect_error(srv, 400, "POST", comp, '{"prompt": "hi", "max_tokens": ', "JSON")
        expect_error(srv, 400, "POST", comp, "[1, 2]", "object")
        # max_completion_tokens is chat's: a completion ignores it
        for extra in [{}, {"max_tokens": 2}]:
            status, r, _ = srv.post(comp, dict({"prompt": "hi", "max_completion_tokens": 0}, **extra))
            if status != 200 or (extra and r["usage"]["completion_tokens"] != 2):
                fail(f"/v1/completions with max_completion_tokens {extra}: {status} {r}")
        expect_error(srv, 400, "POST", comp, "", "JSON")
        expect_error(srv, 400, "POST", comp, {"max_tokens": 3}, "prompt")
        expect_error(srv, 400, "POST", comp, {"prompt": 5}, "prompt")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "max_tokens": "3"}, "max_tokens")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "max_tokens": -1}, "max_tokens")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "max_tokens": 0}, "max_tokens")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "max_tokens": 2.5}, "max_tokens")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "temperature": -1}, "temperature")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "top_p": 0}, "top_p")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "n": 0}, "n")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "stop": 3}, "stop")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "stream": "yes"}, "stream")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "stream_options": {"include_usage": True}},
                     "stream_options")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "logprobs": 21}, "logprobs")
        expect_error(srv, 400, "POST", comp, {"prompt": [1, -2]}, "prompt")
        expect_error(srv, 400, "POST", comp, {"prompt": [1, 999999999]}, "vocabulary")
        for field, val in [("stop_token_ids", [999999999]), ("logit_bias", {"999999999": 1}),
                           ("logit_bias", {"5": 101}), ("logit_bias", {"five": 1})]:
            expect_error(srv, 400, "POST", comp, {"prompt": "hi", field: val}, field)
            _, _, data = srv.request("POST", comp, {"prompt": "hi", field: val})
            if json.loads(data)["error"]["param"] != field:
                fail(f"{field} {val}: the 400 names param {json.loads(data)['error']['param']!r}")
        expect_error(srv, 404, "POST", comp, {"prompt": "hi", "model": "gpt-4"}, "gpt-4")
        expect_error(srv, 400, "POST", comp, b'{"prompt": "\xff\xfe"}', "UTF-8")
        expect_error(srv, 400, "POST", comp, b'{"prompt": "\xc0\xaf"}', "UTF-8")
        expect_error(srv, 400, "POST", comp, '{"prompt": "cut\\u0000here"}', "prompt", "U+0000")
        expect_error(srv, 400, "POST", chat, '{"messages": [{"role": "user", "content": "a\\u0000"}]}',
                     "messages[0].content", "U+0000")
        expect_error(srv, 400, "POST", comp, {"prompt": "word " * 300, "max_tokens": 8}, "maximum context length")
        expect_error(srv, 400, "POST", comp, {"prompt": [5] * 250, "max_tokens": 8}, "maximum context length")
        # max_tokens alone past max_model_len: the context's message, whatever else the request has
        for path, body in ((comp, {"prompt": "hi"}), (chat, {"messages": [{"role": "user", "content": "hi"}]})):
            expect_error(srv, 400, "POST", path, dict(body, max_tokens=100000), "maximum context length")
        expect_error(srv, 413, "POST", comp, {"prompt": "x" * 70000}, "larger than")
        expect_error(srv, 400, "POST", chat, {"messages": []}, "messages")
        expect_error(srv, 400, "POST", chat, {"messages": "hi"}, "messages")
        expect_error(srv, 400, "POST", chat, {"messages": [{"role": "wizard", "content": "x"}]}, "wizard")
        expect_error(srv, 400, "POST", chat, {"messages": [{"role": "user"}]}, "content")
        expect_error(srv, 400, "POST", chat, {"messages": [{"role": "user", "content": "x"}],
                                              "top_logprobs": 2}, "logprobs")
        expect_error(srv, 400, "POST", chat, {"messages": [{"role": "user", "content": "x"}],
                                              "chat_template_kwargs": {"enable_thinking": "no"}}, "enable_thinking")
        expect_error(srv, 404, "GET", "/v2/nothing", None, "no route")
        for method, path, allow in [("GET", comp, "POST"), ("HEAD", comp, "POST"),
                                    ("POST", "/health", "GET, HEAD"), ("DELETE", "/v1/models", "GET, HEAD")]:
            hdrs = expect_error(srv, 405, method, path, None if method != "POST" else {}, "not allowed") \
                if method != "HEAD" else srv.request(method, path)[1]
            if hdrs.get("Allow") != allow:
                fail(f"405 for {method} {path}: Allow {hdrs.get('Allow')!r}, expected {allow!r}")
        # a huge body sent in chunks (no Content-Length) is refused too
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(20):
                s.sendall(b"1000\r\n" + b"x" * 0x1000 + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        reply = s.recv(4096).decode(errors="replace")
        s.close()
        if " 413 " not in reply.splitlines()[0]:
            fail(f"chunked huge body: {reply[:200]}")
        print("ok 413: chunked huge body")
        # still healthy and still answering
        status, _, _ = srv.request("GET", "/health")
        status2, r, _ = srv.post(comp, {"prompt": "hi", "max_tokens": 3, "temperature": 0})
        if status != 200 or status2 != 200 or r["usage"]["completion_tokens"] != 3:
            fail(f"not healthy after bad requests: {status} {status2} {r}")
        srv.wait_idle()
        print("ok: healthy after every bad request")
    with Server(a, "--api-key", "sesame") as srv:
        body = {"prompt": "hi", "max_tokens": 2}
        expect_error(srv, 401, "POST", "/v1/completions", body, "API key")
        expect_error(srv, 401, "POST", "/v1/completions", body, "API key", headers={"Authorization": "Bearer nope"})
        expect_error(srv, 401, "GET", "/v1/models", None, "API key", headers={"Authorization": "Bearer sesam"})
        status, r, _ = srv.post("/v1/completions", body, headers={"Authorization": "Bearer sesame"})
        status2, _, _ = srv.request("GET", "/health")
        status3, _, _ = srv.request("GET", "/v1/models", headers={"Authorization": "bearer sesame"})
        status4, _, _ = srv.request("GET", "/version")
        if status3 != 200:
            fail(f"the scheme 'bearer' in lower case: {status3}")
        if status != 200 or status2 != 200 or status4 != 200:
            fail(f"--api-key: {status} {r} / health {status2} / version {status4}")
        print("ok: --api-key enforced on /v1, not on /health and /version")
    with tempfile.TemporaryDirectory() as tmp:
        keyfile = os.path.join(tmp, "key")
        with open(keyfile, "w") as f:
            f.write("from-file\nsecond line\n")
        with Server(a, "--api-key-file", keyfile) as srv:
            check_key(srv, "from-file", "--api-key-file")
    os.environ["ENCORE_API_KEY"] = "from-env"
    try:
        with Server(a) as srv:
            check_key(srv, "from-env", "ENCORE_API_KEY")
    finally:
        del os.environ["ENCORE_API_KEY"]


def check_key(srv, key, how):
    """`key` (and nothing else) opens /v1/models."""
    expect_error(srv, 401, "GET", "/v1/models", None, "API key", headers={"Authorization": "Bearer nope"})
    expect_error(srv, 401, "GET", "/v1/models", None, "API key", headers={"Authorization": f"Bearer {key}x"})
    status, _, _ = srv.request("GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})
    if status != 200:
        fail(f"{how}: the key {key!r} got {status}")
    print(f"ok: {how} sets the key")


def recv_until(s, buf, enough):
    """Append to bytearray buf (in place, so that a caller catching a timeout keeps what came)
    what socket s sends, until enough(buf) or the peer closes; returns buf."""
    while not enough(buf):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def headers_only(port, head):
    """Send a request's headers (`head`, without the blank line) and no body;
    return (status, error object) of the reply, which must come within 5 s."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(head.encode() + b"\r\n\r\n")
    data = bytearray()
    try:
        recv_until(s, data, lambda d: b"\r\n\r\n" in d)
        head_raw, _, body = bytes(data).partition(b"\r\n\r\n")
        m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head_raw)
        body = bytes(recv_until(s, bytearray(body), lambda b: not m or len(b) >= int(m.group(1))))
    except socket.timeout:
        fail(f"no reply within 5 s to headers alone: {head.splitlines()[0]!r} ({data[:100]!r})")
    finally:
        s.close()
    lines = head_raw.decode(errors="replace").splitlines()
    if not lines:
        fail(f"empty reply to {head.splitlines()[0]!r}")
    # the body was not read: the connection must not take its bytes for a next request
    if "connection: close" not in [x.lower() for x in lines[1:]]:
        fail(f"{head.splitlines()[0]!r}: answered early without Connection: close: {lines}")
    try:
        err = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        fail(f"{head.splitlines()[0]!r}: no error object: {data[:300]!r}")
    return int(lines[0].split()[1]), err


def raw_request(port, data):
    """Send `data` on a new connection and read until the server closes it (within 10 s)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    reply = bytearray()
    try:
        recv_until(s, reply, lambda _: False)
    except socket.timeout:
        fail(f"the connection stayed open after {reply[:200]!r}")
    finally:
        s.close()
    return bytes(reply)


def check_early(a):
    with Server(a, "--api-key", "sesame", "--max-body-bytes", "4096") as srv:
        ok = "Authorization: Bearer sesame\r\nContent-Type: application/json"
        host = "Host: 127.0.0.1"
        for want, head, needle in [
            (401, f"POST /v1/completions HTTP/1.1\r\n{host}\r\nAuthorization: Bearer nope\r\n"
                  "Content-Type: application/json\r\nContent-Length: 100", "API key"),
            (401, f"POST /v1/chat/completions HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\n"
                  "Content-Length: 100", "API key"),
            (413, f"POST /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\nContent-Length: 1000000",
             "larger than"),
            (404, f"POST /v2/nothing HTTP/1.1\r\n{host}\r\n{ok}\r\nContent-Length: 100", "no route"),
            (405, f"PUT /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\nContent-Length: 100",
             "not allowed"),
            (415, f"POST /v1/completions HTTP/1.1\r\n{host}\r\nAuthorization: Bearer sesame\r\n"
                  "Content-Type: text/plain\r\nContent-Length: 100", "application/json"),
            (415, f"POST /tokenize HTTP/1.1\r\n{host}\r\nAuthorization: Bearer sesame\r\n"
                  "Content-Length: 100", "application/json"),
            (421, f"POST /v1/completions HTTP/1.1\r\nHost: evil.example:8000\r\n{ok}\r\nContent-Length: 100",
             "evil.example"),
            # framing a proxy may read otherwise (RFC 9112 6.1, 6.3, 3.2)
            (400, f"POST /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\nContent-Length: 100\r\n"
                  "Transfer-Encoding: chunked", "both Transfer-Encoding and Content-Length"),
            (501, f"POST /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\nTransfer-Encoding: gzip",
             "'gzip'"),
            (501, f"POST /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\nTransfer-Encoding: chunked\r\n"
                  "Transfer-Encoding: chunked", "and more"),
            (400, f"GET /health HTTP/1.1\r\n{host}\r\nHost: evil.example", "this one has 2"),
            (400, "GET /health HTTP/1.1\r\nAuthorization: Bearer sesame", "this one has 0"),
        ]:
            got, err = headers_only(srv.port, head)
            if got != want or needle not in err.get("message", ""):
                fail(f"{head.splitlines()[0]!r}: {got} {err}, expected {want} with {needle!r}")
            print(f"ok {got} before the body: {err['message'][:100]}")
        # two Content-Length headers that differ (request smuggling): 400 and the connection closed
        body = b'{"prompt": "hi", "max_tokens": 2}'
        reply = raw_request(srv.port, f"POST /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\n"
                                      f"Content-Length: 5\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                                      + body)
        head, _, data = reply.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 400 ") or b"\r\nConnection: close" not in head \
                or b"Content-Length headers" not in data:
            fail(f"two Content-Length headers: {reply[:400]!r}")
        print(f"ok 400 and the connection closed: {json.loads(data)['error']['message'][:100]}")
        # the same length twice is one length (RFC 9110): answered
        reply = raw_request(srv.port, f"POST /v1/completions HTTP/1.1\r\n{host}\r\n{ok}\r\n"
                                      f"Content-Length: {len(body)}\r\nContent-Length: {len(body)}\r\n"
                                      "Connection: close\r\n\r\n".encode() + body)
        if not reply.startswith(b"HTTP/1.1 200 "):
            fail(f"the same Content-Length twice: {reply[:300]!r}")
        print("ok 200: the same Content-Length twice")
        # HTTP/1.0 may leave Host out
        reply = raw_request(srv.port, b"GET /health HTTP/1.0\r\n\r\n")
        if b" 200 " not in reply.split(b"\r\n", 1)[0]:
            fail(f"HTTP/1.0 without Host: {reply[:200]!r}")
        # a client's bytes that are not UTF-8, echoed in an error, still make a JSON reply
        for want, raw in [(404, b"GET /v1/models/%FFx HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                b"Authorization: Bearer sesame\r\nConnection: close\r\n\r\n"),
                          (421, b"GET /v1/models HTTP/1.1\r\nHost: \xe9vil\r\n"
                                b"Authorization: Bearer sesame\r\nConnection: close\r\n\r\n")]:
            head, _, data = raw_request(srv.port, raw).partition(b"\r\n\r\n")
            try:
                message = json.loads(data)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                fail(f"{raw[:40]!r}: the error is not JSON: {head[:60]!r} {data[:200]!r}")
            if f" {want} " not in head.decode(errors="replace").split("\r\n")[0] or "\ufffd" not in message:
                fail(f"{raw[:40]!r}: {head[:60]!r} {message!r}")
        print("ok: bytes that are not UTF-8 are U+FFFD in the error's JSON")
        status, _, _ = srv.request("GET", "/health")
        if status != 200:
            fail(f"/health after early refusals: {status}")


def check_hosts(a):
    body = {"prompt": "hi", "max_tokens": 2, "temperature": 0}
    with Server(a) as srv:
        for host in ["localhost", "localhost:8000", "127.0.0.1", f"127.0.0.1:{srv.port}", "[::1]", "[::1]:80",
                     "LocalHost"]:
            status, _, data = srv.request("GET", "/v1/models", headers={"Host": host})
            if status != 200:
                fail(f"Host {host}: {status} {data[:200]!r}")
        for host in ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhostx", "[::2]:80"]:
            expect_error(srv, 421, "GET", "/v1/models", None, host, headers={"Host": host})
        expect_error(srv, 421, "POST", "/v1/completions", body, "evil.example", headers={"Host": "evil.example"})
        for ctype in ["application/json; charset=utf-8", "Application/JSON", "application/json ;charset=UTF-8"]:
            status, r, _ = srv.post("/v1/completions", body, headers={"Content-Type": ctype})
            if status != 200:
                fail(f"Content-Type {ctype!r}: {status} {r}")
        for ctype in ["text/plain", "application/jsonx", "application/x-www-form-urlencoded", "multipart/form-data"]:
            expect_error(srv, 415, "POST", "/v1/completions", body, "application/json", headers={"Content-Type": ctype})
        print("ok: loopback Host names only; application/json with parameters")
    with Server(a, "--allowed-hosts", "llm.example.com, other.example") as srv:
        for host in ["llm.example.com", "LLM.example.com:443", "other.example", "localhost"]:
            status, _, data = srv.request("GET", "/v1/models", headers={"Host": host})
            if status != 200:
                fail(f"--allowed-hosts, Host {host}: {status} {data[:200]!r}")
        expect_error(srv, 421, "GET", "/v1/models", None, "evil.example", headers={"Host": "evil.example"})
        print("ok: --allowed-hosts names")
    with Server(a, "--allowed-hosts", "*") as srv:
        status, _, _ = srv.request("GET", "/v1/models", headers={"Host": "anything.example"})
        if status != 200:
            fail(f"--allowed-hosts '*': {status}")
        print("ok: --allowed-hosts '*' accepts any Host")


def wait_health(srv, want, seconds=5):
    """/health until it says `want` (the engine's stats are published just
    after the callbacks of a step); returns the last (status, body)."""
    deadline = time.time() + seconds
    while True:
        status, _, data = srv.request("GET", "/health")
        if status == want or time.time() > deadline:
            return status, data
        time.sleep(0.02)


def server_with_env(a, name, value):
    """A Server started with the environment variable name=value."""
    os.environ[name] = value
    try:
        return Server(a)
    finally:
        del os.environ[name]


def check_failures(a):
    with server_with_env(a, "ENCORE_FAULT_STEPS", "3") as srv:
        comp = {"prompt": "hi", "max_tokens": 4, "temperature": 0}
        expect_error(srv, 500, "POST", "/v1/completions", comp, "failed in the engine")
        p = subprocess.run(["curl", "--noproxy", "*", "-sS", "-N", "--max-time", "60",
                            "-H", "Content-Type: application/json", "-d", json.dumps(dict(comp, stream=True)),
                            f"http://127.0.0.1:{srv.port}/v1/completions"], capture_output=True, timeout=90)
        raw = p.stdout.decode()
        m = re.search(r"(?m)^event: error\ndata: (.*)$", raw)
        if not m or "failed in the engine" not in json.loads(m.group(1))["error"]["message"] \
                or not raw.endswith("data: [DONE]\n\n"):
            fail(f"stream after a failed step: {raw[-400:]!r}")
        print("ok: a stream ended by a failed step gets an SSE error event")
        chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
        expect_error(srv, 500, "POST", "/v1/chat/completions", chat, "failed in the engine")
        status, data = wait_health(srv, 503)
        failures = srv.metric("encore_engine_step_failures_total")
        errors = srv.metric("encore_request_success_total", ',finished_reason="error"')
        if status != 503 or failures != 3 or errors != 3:
            fail(f"after 3 failed steps: /health {status} {data!r}, step failures {failures}, errors {errors}")
        print(f"ok: /health 503 after three failed steps: {data.decode().strip()}")
        status, r, _ = srv.post("/v1/completions", comp)
        status2, _ = wait_health(srv, 200)
        if status != 200 or status2 != 200:
            fail(f"after a good step: {status} {r}, /health {status2}")
        print("ok: healthy again after a step that works")


def check_oom(a):
    # each reply would wait forever for the last output it lost: a deadline of 30 s tells that
    # from the few seconds the work takes (a batch of 6 x 64 tokens took 10 s under ASan beside
    # another test)
    wait = 30
    with server_with_env(a, "ENCORE_FAULT_FINAL_COPIES", "2") as srv:
        comp = {"prompt": "hi", "max_tokens": 4, "temperature": 0}
        expect_error(srv, 500, "POST", "/v1/completions", comp, "out of memory", timeout=wait)
        expect_error(srv, 500, "POST", "/v1/completions", dict(comp, n=3, max_tokens=64, ignore_eos=True),
                     "out of memory", timeout=wait)
        srv.wait_idle()
        print("ok: afterwards nothing runs and every KV block is free")
        status, r, _ = srv.post("/v1/completions", comp, timeout=wait)
        if status != 200 or not r["choices"][0]["text"]:
            fail(f"after the lost copies: {status} {r}")
        print("ok: the next request is answered")
    with server_with_env(a, "ENCORE_FAULT_FINAL_COPIES", "1") as srv:
        batch = {"prompt": ["hi", "Once upon a time", [9707, 11]], "n": 2, "max_tokens": 64,
                 "ignore_eos": True, "temperature": 0}
        expect_error(srv, 500, "POST", "/v1/completions", batch, "out of memory", timeout=wait)
        srv.wait_idle()
        print("ok: a batch whose one choice lost its last output: 500, then nothing runs")


def template_path(template):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer", "templates", template)


def template_model(a, d, template, text=None):
    """a copy of MODEL (links to its files) whose tokenizer_config.json carries the chat template of
    tests/tokenizer/templates/TEMPLATE (or the template text): an argparse namespace whose models
    directory holds it."""
    src, dst = os.path.join(a.models, MODEL), os.path.join(d, MODEL)
    os.makedirs(dst)
    for name in os.listdir(src):
        if name != "tokenizer_config.json":
            os.symlink(os.path.join(src, name), os.path.join(dst, name))
    with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    if text is None:
        with open(template_path(template), encoding="utf-8") as f:
            text = f.read()
    config["chat_template"] = text
    with open(os.path.join(dst, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    return argparse.Namespace(**dict(vars(a), models=d))


def generation_model(a, d, config):
    """a copy of MODEL (links to its files) with generation_config.json holding config: an argparse
    namespace whose models directory holds it."""
    src, dst = os.path.abspath(os.path.join(a.models, MODEL)), os.path.join(d, MODEL)
    os.makedirs(dst)
    for name in os.listdir(src):
        os.symlink(os.path.join(src, name), os.path.join(dst, name))
    with open(os.path.join(dst, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    return argparse.Namespace(**dict(vars(a), models=d))


def check_generation(a):
    """generation_config.json, as vLLM reads it by default: its sampling fields are the defaults of
    requests that omit them (here top_k 1: greedy whatever the seed, unless a request sets top_k), a
    value equal to transformers' default is none (top_p 1.0 beside), and its eos_token_id list ends
    replies at each id (Qwen3's <|endoftext|> beside config.json's <|im_end|>); --generation-config
    none keeps OpenAI's defaults (and the ids: they are the model's)."""
    comp, endoftext = "/v1/completions", 151643
    body = {"prompt": "Hello", "max_tokens": 6, "ignore_eos": True}
    config = {"eos_token_id": [151645, endoftext], "temperature": 0.9, "top_k": 1, "top_p": 1.0,
              "do_sample": True, "transformers_version": "4.51.0"}
    with tempfile.TemporaryDirectory() as d:
        b = generation_model(a, d, config)
        with Server(b) as srv:
            greedy = srv.post(comp, dict(body, temperature=0))[1]["choices"][0]["text"]
            texts = {srv.post(comp, dict(body, seed=k))[1]["choices"][0]["text"] for k in range(4)}
            if texts != {greedy}:
                fail(f"generation_config top_k 1: seeded replies {texts} are not all the greedy {greedy!r}")
            sampled = {srv.post(comp, dict(body, seed=k, top_k=0))[1]["choices"][0]["text"] for k in range(4)}
            if len(sampled) < 2:
                fail(f"a request's top_k 0 over the model's 1: one text for four seeds {sampled}")
            stop = dict(body, ignore_eos=False, temperature=0, logit_bias={str(endoftext): 100})
            status, r, _ = srv.post(comp, stop)
            c = r["choices"][0]
            if (status != 200 or c["finish_reason"] != "stop" or r["usage"]["completion_tokens"] != 1
                    or c["stop_reason"] != endoftext):
                fail(f"generation_config's <|endoftext|> does not end the reply with its id: {status} {r}")
            # the model's own EOS (config.json's <|im_end|>) is stop_reason null, as in vLLM
            status, r, _ = srv.post(comp, dict(stop, logit_bias={"151645": 100}))
            c = r["choices"][0]
            if status != 200 or c["finish_reason"] != "stop" or c["stop_reason"] is not None:
                fail(f"config.json's <|im_end|>: {status} {r}")
        print(f"ok generation_config.json: top_k 1 the default (4 seeds, one text), a request's top_k "
              f"over it, <|endoftext|> an end of sequence (stop_reason {endoftext}), <|im_end|> null")
        with Server(b, "--generation-config", "none") as srv:
            texts = {srv.post(comp, dict(body, seed=k))[1]["choices"][0]["text"] for k in range(4)}
            if len(texts) < 2:
                fail(f"--generation-config none: one text for four seeds {texts}")
            status, r, _ = srv.post(comp, stop)
            if status != 200 or r["choices"][0]["finish_reason"] != "stop":
                fail(f"--generation-config none: <|endoftext|> no longer ends the reply: {status} {r}")
        print("ok --generation-config none: OpenAI's defaults, the model's end ids kept")
        with open(os.path.join(d, MODEL, "generation_config.json"), "w", encoding="utf-8") as f:
            json.dump({"top_p": 1.5}, f)
        p = subprocess.run([a.encore, "serve", "-m", os.path.join(d, MODEL), "--port", "0"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 0 or "generation_config.json: field 'top_p' is 1.5" not in p.stderr:
            fail(f"a generation_config.json with top_p 1.5: rc {p.returncode} {p.stderr!r}")
        print("ok a bad generation_config.json: refused at start, naming the file and the field")
    # a chat fine-tune of a base model: config.json keeps <|endoftext|>, the tokenizer's eos_token is
    # <|im_end|>; both end a reply, the tokenizer's with stop_reason null and the other with its id
    # (vLLM: tokenizer.eos_token_id, and config.json's id as a stop id)
    with tempfile.TemporaryDirectory() as d:
        b = generation_model(a, d, {})
        os.remove(os.path.join(d, MODEL, "generation_config.json"))
        cfg = os.path.join(d, MODEL, "config.json")
        with open(cfg, encoding="utf-8") as f:
            text = f.read()
        os.remove(cfg)
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(json.dumps(dict(json.loads(text), eos_token_id=endoftext)))
        with Server(b) as srv:
            for tok, reason in ((151645, None), (endoftext, endoftext)):
                status, r, _ = srv.post(comp, dict(body, ignore_eos=False, temperature=0, logit_bias={str(tok): 100}))
                c = r["choices"][0] if status == 200 else {}
                if c.get("finish_reason") != "stop" or r["usage"]["completion_tokens"] != 1 or c["stop_reason"] != reason:
                    fail(f"a fine-tune's token {tok}: {status} {r}")
        p = subprocess.run([a.encore, "generate", "-m", os.path.join(d, MODEL), "--prompt-ids", "9707", "-n", "4",
                            "--temperature", "0", "--print-ids", "--logit-bias", "151645=100"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0 or p.stdout.split() != ["151645"]:
            fail(f"generate with a fine-tune's <|im_end|>: rc {p.returncode} {p.stdout!r} {p.stderr!r}")
    print("ok the tokenizer's eos_token ends a reply (stop_reason null) beside config.json's (its id)")


def expect_chat_prompt(srv, messages, text):
    """The chat prompt of messages is the ids of text."""
    _, chat, _ = srv.post("/tokenize", {"messages": messages})
    _, want, _ = srv.post("/tokenize", {"prompt": text})
    if chat["tokens"] != want["tokens"]:
        fail(f"chat prompt {chat['tokens']} != the ids of {text!r}: {want['tokens']}")


def check_templates_2507(a):
    """The Qwen3 2507 templates: Thinking's prompt opens the think block, so the reply is reasoning
    until "</think>" (forced first by logit_bias: no reasoning, the rest content); Instruct's reply is
    all content, and its prompt has no think block."""
    think_end = 151668
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "temperature": 0,
            "logit_bias": {str(think_end): 100}}
    with tempfile.TemporaryDirectory() as d, Server(template_model(a, d, "qwen3-thinking-2507.jinja")) as srv:
        status, r, _ = srv.post("/v1/chat/completions", body)
        m = r["choices"][0]["message"] if status == 200 else {}
        if status != 200 or m.get("reasoning_content") not in ("", None) or m.get("content") != "</think>" * 2:
            fail(f"thinking-2507: {status} {r}")
        expect_chat_prompt(srv, body["messages"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n")
        body2 = dict(body, max_tokens=4, logit_bias={})
        status, r, _ = srv.post("/v1/chat/completions", body2)
        m = r["choices"][0]["message"]
        if status != 200 or not m.get("reasoning_content") or m.get("content"):
            fail(f"thinking-2507 without </think>: all reasoning, got {r}")
        # vLLM's include_reasoning false: the reasoning left out, whole and streamed
        status, r, _ = srv.post("/v1/chat/completions", dict(body2, include_reasoning=False))
        m = r["choices"][0]["message"]
        streamed = curl_stream(srv, "/v1/chat/completions", dict(body2, include_reasoning=False, stream=True))
        if status != 200 or m.get("reasoning_content") or m.get("content") or \
                any(c["choices"] and c["choices"][0]["delta"].get("reasoning_content") for c in streamed):
            fail(f"include_reasoning false: reasoning in {r} or {streamed}")
        # an enforced tool choice: the reasoning the prompt opened is closed first, then the call
        unit = {"type": "function", "function": {"name": "set_unit", "parameters": {
            "type": "object", "properties": {"unit": {"enum": ["c", "k"]}}, "required": ["unit"]}}}
        body3 = dict(body, max_tokens=300, tools=[unit],
                     tool_choice={"type": "function", "function": {"name": "set_unit"}})
        status, r, _ = srv.post("/v1/chat/completions", body3)
        c = r["choices"][0] if status == 200 else {}
        calls = c.get("message", {}).get("tool_calls") or []
        if (c.get("finish_reason") != "stop" or len(calls) != 1
                or json.loads(calls[0]["function"]["arguments"]) not in ({"unit": "c"}, {"unit": "k"})
                or "<tool_call>" in (c["message"].get("reasoning_content") or "")
                or (c["message"].get("reasoning_content") or "").startswith("<think>")):
            fail(f"thinking-2507 with a named tool_choice: {status} {r}")
    with tempfile.TemporaryDirectory() as d, Server(template_model(a, d, "qwen3-instruct-2507.jinja")) as srv:
        expect_chat_prompt(srv, body["messages"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
        status, r, _ = srv.post("/v1/chat/completions", body)
        m = r["choices"][0]["message"]
        if status != 200 or m.get("reasoning_content") or m.get("content") != "</think>" * 3:
            fail(f"instruct-2507: {status} {r}")
        # no think block before a structured output: <think> pushed, the digit alone comes
        bias = {"151668": 100, "271": 90, "151667": 80}
        status, r, _ = srv.post("/v1/chat/completions", dict(body, logit_bias=bias, structured_outputs={"regex": "[0-9]"}))
        m = r["choices"][0]["message"] if status == 200 else {}
        if status != 200 or m.get("reasoning_content") or not re.fullmatch("[0-9]", m.get("content") or ""):
            fail(f"instruct-2507 structured output: {status} {r}")
    # a model whose own template encore does not render: chat is a 400 naming --chat-template, and
    # with --chat-template (a template file, or a name) the prompt is that template's
    with tempfile.TemporaryDirectory() as d:
        unknown = template_model(a, d, None, text="{% for m in messages %}{{ m.content }}{% endfor %}")
        with Server(unknown) as srv:
            expect_error(srv, 400, "POST", "/v1/chat/completions", body, "--chat-template")
        with Server(unknown, "--chat-template", template_path("qwen3-thinking-2507.jinja")) as srv:
            expect_chat_prompt(srv, body["messages"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n")
        with Server(unknown, "--chat-template", "qwen3-instruct") as srv:
            expect_chat_prompt(srv, body["messages"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    print("ok: Qwen3 2507 templates: Thinking's reply starts in its reasoning, Instruct's is content; "
          "--chat-template replaces an unknown one")


def check_templates_coder(a):
    """Qwen3-Coder's template: /tokenize of a conversation with tools, calls and results equals
    Jinja2's rendering of the template (tests/tokenizer/templates/qwen3-coder.jinja); a named
    tool_choice and "required" are enforced in its XML form and read back as vLLM's qwen3_coder
    parser reads it, each value by its parameter's type, whole and streamed."""
    unit = {"type": "function", "function": {"name": "set_unit", "description": "Units.", "parameters": {
        "type": "object", "properties": {"unit": {"type": "string", "enum": ["celsius", "kelvin"]},
                                         "round": {"type": "boolean"},
                                         "digits": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 3},
                                                              {"type": "null"}]}},
        "required": ["unit", "round", "digits"]}}}
    with tempfile.TemporaryDirectory() as d:
        b = template_model(a, d, "qwen3-coder.jinja")
        with Server(b) as srv:
            for tools in [WEATHER, TIME], [unit]:
                msgs = TOOL_TALK if tools != [unit] else TOOL_TALK[:1]
                status, tok, _ = srv.post("/tokenize", {"messages": msgs, "tools": tools})
                _, want, _ = srv.post("/tokenize", {"prompt": jinja_prompt(b, msgs, tools)})
                if status != 200 or tok["tokens"] != want["tokens"]:
                    fail(f"qwen3-coder prompt with tools: {status} {tok} != Jinja2's {want}")
            for choice in {"type": "function", "function": {"name": "set_unit"}}, "required":
                body = {"messages": TOOL_TALK[:1], "tools": [unit], "tool_choice": choice,
                        "max_tokens": 200, "temperature": 0}
                status, r, _ = srv.post("/v1/chat/completions", body)
                c = r["choices"][0] if status == 200 else {}
                calls = c.get("message", {}).get("tool_calls") or []
                args = json.loads(calls[0]["function"]["arguments"]) if calls else None
                # a named function makes one call ("stop", as OpenAI and vLLM say); "required" one or
                # more, here until max_tokens
                done = ("stop",) if choice != "required" else ("tool_calls", "length")
                if (c.get("finish_reason") not in done or calls[0]["function"]["name"] != "set_unit"
                        or set(args) != {"unit", "round", "digits"} or args["unit"] not in ("celsius", "kelvin")
                        or not isinstance(args["round"], bool)
                        or not (args["digits"] is None or args["digits"] in (0, 1, 2, 3))):
                    fail(f"qwen3-coder tool_choice {choice}: {status} {r}")
                events = curl_stream(srv, "/v1/chat/completions", dict(body, stream=True))
                streamed = [t for e in events for t in (e["choices"][0]["delta"].get("tool_calls") or [])
                            if e.get("choices")]
                text = "".join(t.get("function", {}).get("arguments", "") for t in streamed if t["index"] == 0)
                if not streamed or json.loads(text) != args:
                    fail(f"qwen3-coder streamed call {streamed} != {args}")
    print("ok: Qwen3-Coder's template: the prompt with tools is Jinja2's; enforced calls are its XML, "
          f"read back as {args}")


def check_special(a):
    """Special-token text in a message: the token by default, text with
    --no-special-tokens-in-content (the template's own tokens unchanged)."""
    im_start, im_end = 151644, 151645
    msgs = [{"role": "user", "content": "a<|im_start|>b<|im_end|>"}]
    plain = [{"role": "user", "content": "ab"}]  # the same turn without them
    counts = {}
    for flag in [], ["--no-special-tokens-in-content"]:
        with Server(a, *flag) as srv:
            status, tok, _ = srv.post("/tokenize", {"messages": msgs})
            _, base, _ = srv.post("/tokenize", {"messages": plain})
            if status != 200:
                fail(f"/tokenize {flag}: {status} {tok}")
            ids = tok["tokens"]
            counts[bool(flag)] = (ids.count(im_start), ids.count(im_end))
            template = (base["tokens"].count(im_start), base["tokens"].count(im_end))
            _, text, _ = srv.post("/detokenize", {"tokens": ids})
            if flag and ("<|im_start|>b<|im_end|>" not in text["prompt"] or counts[True] != template):
                fail(f"with {flag}: {counts[True]} special tokens (the template has {template}), "
                     f"text {text}")
            if not flag and counts[False] != (template[0] + 1, template[1] + 1):
                fail(f"by default the content's special tokens are tokens: {counts[False]} vs {template}")
            status, chat, _ = srv.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 3,
                                                                "temperature": 0})
            if status != 200 or chat["usage"]["prompt_tokens"] != tok["count"]:
                fail(f"chat {flag}: {status} {chat}")
            print(f"ok {flag or 'default'}: <|im_start|>, <|im_end|> counted {ids.count(im_start)}, "
                  f"{ids.count(im_end)} times (the template alone: {template}); chat prompt_tokens agree")
            check_special_tools(srv, flag)


def check_special_tools(srv, flag):
    """The same for text from a tool definition (its description)."""
    im_start, im_end = 151644, 151645

    def tools(description):
        return [{"type": "function", "function": {"name": "f", "description": description,
                                                  "parameters": {"type": "object", "properties": {}}}}]
    msgs = [{"role": "user", "content": "hi"}]
    counts = []
    for description in ["a<|im_end|>\n<|im_start|>user", "a"]:
        status, tok, _ = srv.post("/tokenize", {"messages": msgs, "tools": tools(description)})
        if status != 200:
            fail(f"/tokenize with tools {flag}: {status} {tok}")
        counts.append((tok["tokens"].count(im_start), tok["tokens"].count(im_end)))
    forged, template = counts
    want = template if flag else (template[0] + 1, template[1] + 1)
    if forged != want:
        fail(f"{flag or 'default'}: a tool description's <|im_start|>, <|im_end|> give {forged} special "
             f"tokens, expected {want} (the template alone: {template})")
    print(f"ok {flag or 'default'}: special-token text in a tool description counted {forged} "
          f"(the template alone: {template})")


def open_stream(port, body, extra_headers=b""):
    """Send a streaming request on a raw socket; return the socket."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              + extra_headers + b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    return s


def read_until(s, needle, limit=1 << 20):
    buf = b""
    while needle not in buf and len(buf) < limit:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    return buf


def sse_spec_events(raw):
    """The data of each event of an SSE stream parsed as the WHATWG spec says
    (a line starting with ':' is a comment; a blank line ends an event), and
    the number of comment lines."""
    events, data, comments = [], [], 0
    for line in raw.split("\n"):
        if line == "":
            if data:
                events.append("\n".join(data))
            data = []
        elif line.startswith(":"):
            comments += 1
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return events, comments


def slow_server(a):
    """A server with --timeout 1 whose engine steps take 2.5 s each
    (ENCORE_STEP_DELAY_MS): a stream is silent past the timeout."""
    os.environ["ENCORE_STEP_DELAY_MS"] = "2500"
    try:
        return Server(a, "--timeout", "1")
    finally:
        del os.environ["ENCORE_STEP_DELAY_MS"]


def check_keepalive(a):
    with slow_server(a) as srv:
        for path, body in [
            ("/v1/completions", {"prompt": "hi", "max_tokens": 2, "temperature": 0, "ignore_eos": True}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
                                      "temperature": 0, "ignore_eos": True}),
        ]:
            t0 = time.time()
            p = subprocess.run(["curl", "--noproxy", "*", "-sS", "-N", "--max-time", "60",
                                "-H", "Content-Type: application/json",
                                "-d", json.dumps(dict(body, stream=True, stream_options={"include_usage": True})),
                                f"http://127.0.0.1:{srv.port}{path}"], capture_output=True, timeout=90)
            raw = p.stdout.decode()
            if p.returncode != 0 or not raw.endswith("data: [DONE]\n\n"):
                fail(f"{path}: a stream silent past --timeout was cut (curl {p.returncode} {p.stderr!r}): {raw[-300:]!r}")
            events, comments = sse_spec_events(raw)
            if comments == 0 or events[-1] != "[DONE]":
                fail(f"{path}: no keep-alive comments in {raw[:300]!r}")
            for line in raw.split("\n"):
                if line.startswith(":") and line != ": keep-alive":
                    fail(f"{path}: comment {line!r}")
            chunks = [json.loads(e) for e in events[:-1]]
            if chunks[-1]["usage"]["completion_tokens"] != 2:
                fail(f"{path}: usage {chunks[-1]}")
            # with the comments removed the stream is the usual one
            sse_events(re.sub(r"(?m)^: keep-alive\n\n", "", raw))
            print(f"ok {path}: {comments} keep-alive comments over {time.time() - t0:.1f} s, "
                  f"{len(chunks)} chunks, [DONE] last")


def post_once_admitted(srv, path, body, refused):
    """POST until the answer is not `refused` (10 s at most): the engine may be
    idle while a closed stream's admission is given back only when its
    connection is torn down, a moment later."""
    deadline = time.time() + 10
    while True:
        status, r, _ = srv.post(path, body)
        if status != refused or time.time() > deadline:
            return status, r
        time.sleep(0.05)


def check_limits(a):
    with Server(a, "--max-model-len", "1024", "--max-queue", "1") as srv:
        comp = "/v1/completions"
        expect_error(srv, 400, "POST", "/detokenize", {"tokens": [1] * 1025}, "tokens", "max_model_len")
        status, r, _ = srv.post("/detokenize", {"tokens": [1] * 1024})
        if status != 200:
            fail(f"/detokenize of max_model_len ids: {status} {r}")
        expect_error(srv, 400, "POST", "/tokenize", {"prompt": [1] * 1025}, "prompt", "max_model_len")
        expect_error(srv, 400, "POST", "/tokenize", {"prompt": "a" * (32 * 1024 + 1)}, "prompt", "bytes")
        expect_error(srv, 400, "POST", "/tokenize", {"prompt": "hi " * 3000}, "prompt", "max_model_len")
        expect_error(srv, 400, "POST", "/tokenize", {"messages": [{"role": "user", "content": "hi " * 3000}]},
                     "messages", "max_model_len")
        status, r, _ = srv.post("/tokenize", {"prompt": "hi " * 100})
        if status != 200 or r["count"] < 100:
            fail(f"/tokenize of a short text: {status} {r}")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "max_tokens": 2, "stop": ["x" * 1025]},
                     "stop", "1024 bytes")
        expect_error(srv, 400, "POST", comp, {"prompt": "hi", "max_tokens": 2, "stop": ["x"] * 17}, "stop")
        status, r, _ = srv.post(comp, {"prompt": "hi", "max_tokens": 2, "stop": ["x" * 1024]})
        if status != 200:
            fail(f"a stop string of 1024 bytes: {status} {r}")
    # n x max_tokens x top_logprobs: 16 x 4000 x 20 = 1280000 > 2^20
    with Server(a, "--max-model-len", "4096") as srv:
        comp = "/v1/completions"
        over = {"prompt": "hi", "n": 16, "max_tokens": 4000, "logprobs": 20, "ignore_eos": True}
        expect_error(srv, 400, "POST", comp, over, "logprobs", "1048576", timeout=20)
        chat = {"messages": [{"role": "user", "content": "hi"}], "n": 16, "logprobs": True,
                "top_logprobs": 20, "ignore_eos": True}  # the default max_tokens: the rest of 4096
        expect_error(srv, 400, "POST", "/v1/chat/completions", chat, "top_logprobs", "1048576", timeout=20)
        # a batch: 4 prompts x n 4 x 4000 x 20 (one prompt alone would be within)
        expect_error(srv, 400, "POST", comp, dict(over, prompt=["hi"] * 4, n=4), "logprobs", "1048576",
                     "over every prompt", timeout=20)
        status, r, _ = srv.post(comp, dict(over, max_tokens=3))
        if status != 200 or len(r["choices"]) != 16:
            fail(f"n x max_tokens x logprobs within the budget: {status} {r}")
    with Server(a, "--max-queue", "1") as srv:
        long = {"prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True, "temperature": 0,
                "stream": True}
        s = open_stream(srv.port, long)
        read_until(s, b"data: ")
        expect_error(srv, 503, "POST", "/tokenize", {"prompt": "hi"}, "busy")
        expect_error(srv, 503, "POST", "/detokenize", {"tokens": [1, 2]}, "busy")
        s.close()
        srv.wait_idle()
        status, r = post_once_admitted(srv, "/tokenize", {"prompt": "hi"}, 503)
        if status != 200:
            fail(f"/tokenize after the queue drained: {status} {r}")
        print("ok: /tokenize and /detokenize count in --max-queue")


def expect_per_client_cap(srv, headers=None):
    """With one long stream of 127.0.0.1 running: another from 127.0.0.1 gets
    429 with Retry-After; returns the status of one from 127.0.0.2."""
    long = {"prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True, "temperature": 0,
            "stream": True}
    auth = b"".join(f"{k}: {v}\r\n".encode() for k, v in (headers or {}).items())
    s = open_stream(srv.port, long, auth)
    read_until(s, b"data: ")
    short = {"prompt": "hi", "max_tokens": 2}
    hdrs = expect_error(srv, 429, "POST", "/v1/completions", short, "--max-queue-per-client", headers=headers)
    if hdrs.get("Retry-After") != "1":
        fail(f"429 without Retry-After: {hdrs}")
    expect_error(srv, 429, "POST", "/tokenize", {"prompt": "hi"}, "--max-queue-per-client", headers=headers)
    status, _, data = srv.request("POST", "/v1/completions", short, headers=headers, source="127.0.0.2")
    s.close()
    srv.wait_idle()
    return status, data


def check_fairness(a):
    with Server(a, "--max-queue", "8", "--max-queue-per-client", "1") as srv:
        status, data = expect_per_client_cap(srv)
        if status != 200:
            fail(f"another client (127.0.0.2) was not admitted: {status} {data[:200]!r}")
        print("ok: 127.0.0.2 admitted while 127.0.0.1 is at its cap")
    with Server(a, "--max-queue", "4", "--max-queue-per-client", "2") as srv:
        # more choices than the client may ever have at once: 400 (retrying cannot help), not 429
        body = {"prompt": "hi", "max_tokens": 2}
        def param_of(fields):
            _, _, data = srv.request("POST", "/v1/completions", dict(body, **fields))
            return json.loads(data)["error"].get("param")
        for n, needle in [(3, "--max-queue-per-client"), (5, "--max-queue")]:
            hdrs = expect_error(srv, 400, "POST", "/v1/completions", dict(body, n=n), "n", needle)
            if "Retry-After" in hdrs or param_of({"n": n}) != "n":
                fail(f"n = {n}: a 400 with Retry-After, or not naming n: {hdrs}")
        status, r, _ = srv.post("/v1/completions", dict(body, n=2))
        if status != 200 or len(r["choices"]) != 2:
            fail(f"n = 2 with --max-queue-per-client 2: {status} {r}")
        print("ok: n over --max-queue-per-client (or --max-queue) is a 400, n at it is answered")
        # a batch is its prompts x n choices
        for fields in [{"prompt": ["a", "b", "c"]}, {"prompt": ["a", "b"], "n": 2}]:
            expect_error(srv, 400, "POST", "/v1/completions", dict(body, **fields), "prompts",
                         "--max-queue-per-client")
            if param_of(fields) != "prompt":
                fail(f"{fields}: the 400 does not name 'prompt': {param_of(fields)!r}")
        status, r, _ = srv.post("/v1/completions", dict(body, prompt=["a", "b"]))
        if status != 200 or len(r["choices"]) != 2:
            fail(f"a batch of 2 prompts with --max-queue-per-client 2: {status} {r}")
        print("ok: a batch over --max-queue-per-client (prompts x n) is a 400, one at it is answered")
    with Server(a, "--max-queue", "8", "--max-queue-per-client", "1", "--api-key", "k") as srv:
        status, data = expect_per_client_cap(srv, {"Authorization": "Bearer k"})
        if status != 429:
            fail(f"with --api-key, 127.0.0.2 holding the key is the same client: {status} {data[:200]!r}")
        print("ok: with --api-key, every holder of the key is one client")
    with Server(a, "--max-queue", "2", "--max-tokens-default", "3") as srv:  # per client: 2 / 2 = 1
        expect_per_client_cap(srv)
        print("ok: the default per-client cap is half of --max-queue")
        body = {"prompt": "hi", "temperature": 0, "ignore_eos": True}
        status, r = post_once_admitted(srv, "/v1/completions", body, 429)
        if status != 200 or r["usage"]["completion_tokens"] != 3:
            fail(f"--max-tokens-default 3: {status} {r}")
        status, r, _ = srv.post("/v1/completions", dict(body, max_tokens=5))
        if status != 200 or r["usage"]["completion_tokens"] != 5:
            fail(f"--max-tokens-default with max_tokens 5 given: {status} {r}")
        print("ok: --max-tokens-default 3 caps a missing max_tokens, a given one is kept")


def check_queue(a):
    with Server(a, "--max-queue", "1") as srv:
        long = {"prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True, "temperature": 0, "stream": True}
        s = open_stream(srv.port, long)
        read_until(s, b"data: ")
        hdrs = expect_error(srv, 503, "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2}, "busy")
        if hdrs.get("Retry-After") != "1":
            fail(f"503 without Retry-After: {hdrs}")
        s.close()
        srv.wait_idle()
        status, r = post_once_admitted(srv, "/v1/completions", {"prompt": "hi", "max_tokens": 2}, 503)
        if status != 200:
            fail(f"after the queue drained: {status} {r}")
        print("ok: admitted again once the queue drained")


def check_disconnect(a):
    with Server(a, "--max-num-seqs", "1") as srv:
        aborts0 = srv.metric("encore_request_success_total", ',finished_reason="abort"')
        long = {"prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True, "temperature": 0,
                "stream": True}
        s1 = open_stream(srv.port, long)
        read_until(s1, b"data: ")
        # a second one waits (one sequence at a time), then goes away too
        s2 = open_stream(srv.port, long)
        time.sleep(0.3)
        if srv.metric("encore_num_requests_running") != 1:
            fail("expected one running request")
        t0 = time.time()
        s2.close()
        s1.close()
        srv.wait_idle(10)
        dt = time.time() - t0
        aborts = srv.metric("encore_request_success_total", ',finished_reason="abort"') - aborts0
        if aborts != 2:
            fail(f"expected 2 aborted requests, got {aborts}")
        print(f"ok: 2 clients went away (one running, one waiting): aborted, every block free in {dt:.2f} s")
        # a client waiting for a whole (not streamed) reply goes away too
        s4 = open_stream(srv.port, dict(long, stream=False))
        time.sleep(0.3)
        if srv.metric("encore_num_requests_running") != 1:
            fail("expected the non-streaming request to run")
        s4.close()
        srv.wait_idle(10)
        if srv.metric("encore_request_success_total", ',finished_reason="abort"') - aborts0 != 3:
            fail("the non-streaming request whose client went away was not aborted")
        print("ok: a non-streaming client that went away: aborted, every block free")
        # a batch of 3 (one runs, two wait): every prompt's request aborted, streamed or not
        for stream in [True, False]:
            before = srv.metric("encore_request_success_total", ',finished_reason="abort"')
            s5 = open_stream(srv.port, dict(long, prompt=["Once upon a time", "Hello", [9707, 11]],
                                            stream=stream))
            if stream:
                read_until(s5, b"data: ")
            # the three are admitted soon after the body is read (a loaded machine may take a
            # while); both counts from one scrape of /metrics, so that they agree
            deadline, seen, lab = time.time() + 10, None, f'{{model_name="{MODEL}"}}'
            while time.time() < deadline and seen != (1, 2):
                m = srv.metrics()
                seen = (m["encore_num_requests_running" + lab], m["encore_num_requests_waiting" + lab])
                if seen != (1, 2):
                    time.sleep(0.05)
            if seen != (1, 2):
                fail(f"expected one of the batch's requests running and two waiting, saw {seen}")
            s5.close()
            srv.wait_idle(10)
            aborts = srv.metric("encore_request_success_total", ',finished_reason="abort"') - before
            if aborts != 3:
                fail(f"a batch of 3 whose client went away (stream {stream}): {aborts} aborted, expected 3")
            print(f"ok: a batch's client went away (stream {stream}): its 3 requests aborted, every block free")
        # SIGTERM with a stream open: the server ends it and exits 0 (checked on leaving `with`)
        s3 = open_stream(srv.port, long)
        read_until(s3, b"data: ")
        t0 = time.time()
        srv.p.send_signal(signal.SIGTERM)
        rest = read_until(s3, b"never")
        s3.close()
        if srv.p.wait(timeout=30) != 0:
            fail(f"server exited {srv.p.returncode} on SIGTERM with a stream open")
        print(f"ok: SIGTERM with a stream open: stream closed, exit 0 in {time.time() - t0:.2f} s")


def stream_text(raw):
    """The text, finish reason and completion tokens of a completions stream
    with include_usage, read from a raw socket (chunked)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    text, out = b"", b""
    while body:  # de-chunk
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out += rest[:n]
        body = rest[n + 2:]
    events = sse_events(out.decode())
    for e in events[:-1]:
        text += e["choices"][0]["text"].encode()
    return text.decode(), events[-2]["choices"][0]["finish_reason"], events[-1]["usage"]["completion_tokens"]


def check_concurrency(a):
    with Server(a, "--max-num-seqs", "32") as srv:
        aborts0 = srv.metric("encore_request_success_total", ',finished_reason="abort"')
        prompts = [" ".join(["alpha", "beta", "gamma", "delta"][i % 4] for _ in range(1 + i % 7)) + f" {i}"
                   for i in range(32)]
        results = [None] * 32
        errors = []

        def client(i):
            try:
                body = {"prompt": prompts[i], "max_tokens": 8 + i % 9, "temperature": 0, "stream": True,
                        "ignore_eos": True, "stream_options": {"include_usage": True}}
                if i % 4 == 3:  # long enough to be cut: goes away after its first chunk
                    body["max_tokens"] = 3000
                s = open_stream(srv.port, body)
                if i % 4 == 3:
                    read_until(s, b"data: ")
                    s.close()
                    return
                raw = read_until(s, b"0\r\n\r\n")
                s.close()
                results[i] = stream_text(raw)
            except Exception as e:  # reported below
                errors.append(f"client {i}: {e!r}")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
        t0 = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(1, 180 - (time.time() - t0)))
        if any(t.is_alive() for t in threads) or errors:
            fail(f"clients did not finish in time or failed: {errors}")
        m = srv.wait_idle(20)
        aborts = m['encore_request_success_total{model_name="%s",finished_reason="abort"}' % MODEL]
        if aborts - aborts0 != 8:
            fail(f"expected the 8 clients that went away to be aborted, got {aborts}")
        total = int(m['encore_kv_cache_blocks_total{model_name="%s"}' % MODEL])
        print(f"ok: 32 streams in {time.time() - t0:.1f} s, 8 went away; afterwards all {total} blocks free")
        for i in range(32):
            if i % 4 == 3:
                continue
            status, alone, _ = srv.post("/v1/completions", {"prompt": prompts[i], "max_tokens": 8 + i % 9,
                                                            "temperature": 0, "ignore_eos": True})
            want = (alone["choices"][0]["text"], alone["choices"][0]["finish_reason"],
                    alone["usage"]["completion_tokens"])
            if status != 200 or results[i] != want:
                fail(f"request {i}: under load {results[i]!r} != alone {want!r}")
        print("ok: each of the 24 completed requests equals its prompt run alone")


def run_openai_client(a, *mode, server=None):
    if not a.node_dir or not os.path.isdir(os.path.join(a.node_dir, "node_modules", "openai")):
        fail(f"the openai npm package is not installed under {a.node_dir} (test server_npm_install)")
    with server or Server(a) as srv:
        p = subprocess.run([a.node, os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai_client.mjs"),
                            a.node_dir, f"http://127.0.0.1:{srv.port}/v1", MODEL, *mode],
                           capture_output=True, text=True, timeout=200)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            fail(f"openai_client.mjs exited {p.returncode}: {p.stderr}")
        srv.wait_idle()


def check_args(a):
    m = os.path.join(a.models, MODEL)

    def run(args, code, needle):
        p = subprocess.run([a.encore, "serve"] + args, capture_output=True, text=True, timeout=120)
        out = p.stdout + p.stderr
        if p.returncode != code or needle not in out:
            fail(f"serve {args}: exit {p.returncode}, expected {code} with {needle!r}: {out[-300:]}")
        print(f"ok exit {code}: {out.strip().splitlines()[-1][:110] if out.strip() else ''}")

    run(["--help"], 0, "usage: encore serve")
    run(["--port", "0"], 2, "-m DIR")
    run(["-m", m, "--port", "70000"], 2, "--port")
    run(["-m", m, "--max-queue", "0"], 2, "--max-queue")
    run(["-m", m, "--max-body-bytes", "10"], 2, "--max-body-bytes")
    run(["-m", m, "--timeout", "0"], 2, "--timeout")
    run(["-m", m, "--max-queue-per-client", "0"], 2, "--max-queue-per-client")
    run(["-m", m, "--max-tokens-default", "0"], 2, "--max-tokens-default")
    run(["-m", m, "--bogus"], 2, "--bogus")
    run(["-m", m, "--allowed-hosts", " , "], 2, "--allowed-hosts")
    with tempfile.TemporaryDirectory() as tmp:
        missing, empty = os.path.join(tmp, "no-such-key"), os.path.join(tmp, "empty-key")
        open(empty, "w").close()
        run(["-m", m, "--api-key-file", missing], 2, missing)
        run(["-m", m, "--api-key-file", empty], 2, empty)
        run(["-m", m, "--api-key-file", tmp], 2, tmp)
        run(["-m", m, "--api-key", "k", "--api-key-file", empty], 2, "not both")
        run(["-m", m, "--api-key", ""], 2, "--api-key: the key is empty")
    run(["-m", m, "--verify-capture"], 2, "--verify-capture")
    run(["-m", m, "--chat-template", "qwen2"], 2, "neither a file nor")
    run(["-m", m, "--max-model-len", "1000000"], 2, "max_model_len 1000000 out of range")
    # --quantize reaches the served engine: its greedy text is generate's with the same option
    # (and not the unquantized model's)
    gen = [a.encore, "generate", "-m", m, "-p", "The quick brown fox", "-n", "16", "--temperature", "0"]
    want = subprocess.run(gen + ["--quantize", "q4_0"], capture_output=True, text=True, timeout=120)
    plain = subprocess.run(gen, capture_output=True, text=True, timeout=120)
    with Server(a, "--quantize", "q4_0") as srv:
        status, r, _ = srv.post("/v1/completions", {"prompt": "The quick brown fox", "max_tokens": 16,
                                                    "temperature": 0})
        got = r["choices"][0]["text"] if status == 200 else None
    if want.returncode != 0 or got is None or got != want.stdout.rstrip("\n") or got == plain.stdout.rstrip("\n"):
        fail(f"serve --quantize q4_0: {status} {got!r}; generate --quantize q4_0 {want.stdout!r} "
             f"({want.stderr[-200:]}), unquantized {plain.stdout!r}")
    print("ok: serve --quantize q4_0 gives generate --quantize q4_0's text")
    # every engine option reaches the served engine: the line serve prints at start names each,
    # as the engine resolved it
    opts = {"--kv-cache-dtype": "q8_0", "--block-size": "32", "--max-num-seqs": "3", "--kv-blocks": "100",
            "--decode-steps": "8", "--max-num-batched-tokens": "512", "--max-model-len": "1024", "-t": "1"}
    for flags, want in [(sum(opts.items(), ()) + ("--no-prefix-caching",),
                         r"encore serve: cpu \(\w+ kernels, 1 thread\); KV cache 100 blocks of 32 tokens, Q8_0 "
                         r"\([0-9.]+ MiB\); max_model_len 1024, max_num_seqs 3, max_num_batched_tokens 512; "
                         r"decode captured, 8 steps a replay; prefix caching off\n"),
                        (("--eager",), r"KV cache \d+ blocks of 16 tokens, BF16 \([0-9.]+ MiB\); "
                         r"max_model_len 4096, max_num_seqs 16, max_num_batched_tokens 2048; "
                         r"decode eager \(no capture\); prefix caching on\n")]:
        with Server(a, *flags) as srv:
            pass
        if not re.search(want, srv.stderr):
            fail(f"serve {' '.join(flags)}: the engine line is not /{want}/: {srv.stderr[-400:]!r}")
    print("ok: serve's engine options reach the engine (the line at start)")
    run(["-m", m, "--host", "no-such-host.invalid"], 2, "--host no-such-host.invalid")
    run(["-m", os.path.join(a.models, "nonexistent"), "--host", "no-such-host.invalid"], 2,
        "--host no-such-host.invalid")  # said before the model is loaded
    run(["-m", os.path.join(a.models, "nonexistent")], 1, "nonexistent")
    with Server(a) as srv:  # its port is taken
        run(["-m", m, "--port", str(srv.port)], 1, "cannot listen")


def check_bench(a):
    """`encore bench serve` against `encore serve`: every request completes,
    and the token counts it reports are the ones the server's own counters
    saw (ignore_eos makes each request generate exactly max_tokens)."""
    with Server(a) as s:
        before = s.metric("encore_generation_tokens_total")
        prompt_before = s.metric("encore_prompt_tokens_total")
        out = subprocess.run([a.encore, "bench", "serve", "--url", f"http://127.0.0.1:{s.port}", "--clients", "4",
                              "--num-prompts", "8", "--input-len", "16", "--output-len", "8", "--json"],
                             capture_output=True, text=True, timeout=240)
        if out.returncode != 0:
            fail(f"bench serve exited {out.returncode}: {out.stderr}")
        rep = json.loads(out.stdout)
        s.wait_idle()
        generated = s.metric("encore_generation_tokens_total") - before
        prompt = s.metric("encore_prompt_tokens_total") - prompt_before
        if rep["model"] != MODEL or rep["completed"] != 8 or rep["failed"] != 0:
            fail(f"bench serve report: {rep}")
        if rep["output_tokens"] != 64 or generated != 64:
            fail(f"output tokens: bench {rep['output_tokens']}, server {generated}, want 64")
        if rep["prompt_tokens"] != 128 or prompt > 128:
            fail(f"prompt tokens: bench {rep['prompt_tokens']}, server computed {prompt}, want 128")
        if not 0 < rep["ttft_ms"]["p50"] <= rep["e2e_ms"]["p50"]:
            fail(f"latencies: {rep}")
        # the server decodes up to 4 steps per replay (the default) and streams
        # each replay's tokens as one chunk
        if not 1.0 <= rep["tokens_per_chunk"] <= 4.0:
            fail(f"tokens per chunk {rep['tokens_per_chunk']}, want 1..4")
    print(f"bench: 8 requests over 4 clients, counts match the server's; "
          f"{rep['tokens_per_chunk']:.2f} tokens per chunk")


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "days": {"type": "integer", "minimum": 1},
                                                    "min_temp": {"type": "number", "minimum": -90.0}},
                   "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"tz": {"type": "string"}}}}}
TOOL_TALK = [
    {"role": "user", "content": "Weather in Paris and the time in Tokyo?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city":"Paris","days":2}'}},
        {"id": "call_2", "type": "function",
         "function": {"name": "get_time", "arguments": '{ "tz" : "Asia/Tokyo" }'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
    {"role": "tool", "tool_call_id": "call_2", "content": "09:14"},
]


def jinja_prompt(a, messages, tools):
    """The model's template rendered by Jinja2 as vLLM renders it: the tools
    as sent, each call's arguments parsed into an object."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer"))
    import render_chat
    with open(os.path.join(a.models, MODEL, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    msgs = json.loads(json.dumps(messages))
    for m in msgs:
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
        if m.get("content") is None:
            m["content"] = ""
    template = render_chat.compile_template(config["chat_template"])
    return render_chat.render(template, render_chat.special_tokens_map(config),
                              {"messages": msgs, "tools": tools, "add_generation_prompt": True})


def check_tools(a):
    with Server(a) as srv:
        chat = "/v1/chat/completions"
        for choice in [None, "auto", "none"]:
            body = {"messages": TOOL_TALK, "tools": [WEATHER, TIME]}
            if choice:
                body["tool_choice"] = choice
            status, got, _ = srv.post("/tokenize", body)
            text = jinja_prompt(a, TOOL_TALK, [WEATHER, TIME])
            status2, want, _ = srv.post("/tokenize", {"prompt": text})
            if status != 200 or status2 != 200 or got["tokens"] != want["tokens"]:
                fail(f"/tokenize with tools ({choice}): {status} {str(got)[:200]} != Jinja2's "
                     f"{str(want)[:200]}")
            if "<tools>" not in text or '{"city": "Paris", "days": 2}' not in text or "-90.0" not in text:
                fail(f"Jinja2's prompt lacks the tools or the call: {text[:300]!r}")
        print(f"ok /tokenize of a tool conversation == Jinja2's template ({len(got['tokens'])} ids), "
              "tool_choice absent, auto and none")
        for stream in [False, True]:
            body = {"messages": TOOL_TALK, "tools": [WEATHER, TIME], "max_tokens": 8,
                    "temperature": 0, "stream": stream}
            if stream:
                chunks = curl_stream(srv, chat, body)
                finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"]]
                if finish not in (["length"], ["stop"], ["tool_calls"]):
                    fail(f"streamed chat with tools: finishes {finish}")
            else:
                status, r, _ = srv.post(chat, body)
                if status != 200 or r["choices"][0]["finish_reason"] not in ("length", "stop", "tool_calls"):
                    fail(f"chat with tools: {status} {r}")
        print("ok chat with tools and tool results answers, streamed and not")
        # an auto call the model made (a regex forces one, then text): "tool_calls" when the reply
        # ends, and also when max_tokens cuts the text after it, as vLLM answers ("tool_calls"
        # whenever its parser found a call)
        forced = {"messages": [{"role": "user", "content": "time?"}], "tools": [TIME], "temperature": 0,
                  "max_tokens": 40, "chat_template_kwargs": {"enable_thinking": False}}
        call = '<tool_call>\\n\\{"name": "get_time", "arguments": \\{\\}\\}\\n</tool_call>'
        for tail, why in [("( x){1,3}", "stop"), ("( x){200}", "length")]:
            body = dict(forced, structured_outputs={"regex": call + tail})
            status, r, _ = srv.post(chat, body)
            c = r["choices"][0] if status == 200 else {}
            streamed = curl_stream(srv, chat, dict(body, stream=True))
            finish = [x["choices"][0]["finish_reason"] for x in streamed if x["choices"][0]["finish_reason"]]
            if (c.get("finish_reason") != "tool_calls" or finish != ["tool_calls"]
                    or [t["function"]["name"] for t in c["message"]["tool_calls"]] != ["get_time"]
                    or r["usage"]["completion_tokens"] > 40 or (why == "length") != (r["usage"]["completion_tokens"] == 40)):
                fail(f"an auto call, then {why}: {status} {r} / streamed finish {finish}")
        print("ok an auto call finishes \"tool_calls\", cut short by max_tokens after it too (vLLM's)")
        base = {"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER], "max_tokens": 4}
        for fields, param in [
            ({"tools": {"a": 1}}, "tools"),
            ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools[0].function.name"),
            ({"tools": [{"type": "function"}]}, "tools[0].function"),
            ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name"),
            ({"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
             "tools[0].function.parameters"),
            ({"tool_choice": "sometimes"}, "tool_choice"),
            ({"tool_choice": {"type": "function", "function": {"name": "send_mail"}}},
             "tool_choice.function.name"),
            # enforced: WEATHER's "minimum" on a number is a keyword the grammar lacks
            ({"tool_choice": "required"}, "tools"),
            ({"tool_choice": {"type": "function", "function": {"name": "get_weather"}}}, "tools"),
            ({"tools": None, "tool_choice": "auto"}, "tool_choice"),
            ({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {
                "name": "get_weather", "arguments": ["Paris"]}}]}]},
             "messages[0].tool_calls[0].function.arguments"),
            ({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\": "}}]}]},
             "messages[0].tool_calls[0].function.arguments"),
            ({"messages": [{"role": "tool", "content": "x", "tool_call_id": 1}]}, "messages[0].tool_call_id"),
        ]:
            body = dict(base, **fields)
            body = {k: v for k, v in body.items() if v is not None}
            expect_error(srv, 400, "POST", chat, body, param)
            _, _, data = srv.request("POST", chat, body)
            if json.loads(data)["error"]["param"] != param:
                fail(f"{fields}: param {json.loads(data)['error']['param']!r}, want {param!r}")
        srv.wait_idle()


def expect_param(srv, path, body, param, *needles):
    """A 400 whose error names `param` (err.param) and says each needle."""
    expect_error(srv, 400, "POST", path, body, *needles)
    _, _, data = srv.request("POST", path, body)
    got = json.loads(data)["error"]["param"]
    if got != param:
        fail(f"{str(body)[:100]}: param {got!r}, want {param!r}")


def check_fields(a):
    comp = "/v1/completions"
    with Server(a, "--max-model-len", "256") as srv:
        base = {"prompt": "Hello", "max_tokens": 2, "temperature": 0}
        # suffix: refused as vLLM refuses it; null and "" ask for nothing
        expect_param(srv, comp, dict(base, suffix="x"), "suffix", "not supported")
        status, plain, _ = srv.post(comp, base)
        for empty in (None, ""):
            status, r, _ = srv.post(comp, dict(base, suffix=empty))
            if status != 200 or r["choices"][0]["text"] != plain["choices"][0]["text"]:
                fail(f"suffix {empty!r}: {status} {r}")
        print("ok suffix: 400 naming it; null and \"\" answered as without")
        check_truncate(srv)
        check_continuous_usage(srv)
        check_echo_only(srv)
        check_token_ids(srv)
        check_best_of(srv)
        check_allowed_ids(srv)
        chat, msgs = "/v1/chat/completions", [{"role": "user", "content": "Hi"}]
        for path, body in ((comp, base), (chat, {"messages": msgs, "max_tokens": 2})):
            expect_param(srv, path, dict(body, prompt_logprobs=1, stream=True), "prompt_logprobs", "stream")
            expect_param(srv, path, dict(body, prompt_logprobs=21), "prompt_logprobs", "[0, 20]")
            status, r, _ = srv.post(path, dict(body, bad_words=[], prompt_logprobs=None))
            if status != 200 or "prompt_logprobs" in r or "prompt_logprobs" in r["choices"][0]:
                fail(f"{path} with bad_words [] and prompt_logprobs null: {status} {r}")
        print("ok prompt_logprobs in a stream or above 20: 400; bad_words [] and null answered")
        check_parallel_tool_calls(srv)
        status, r, _ = srv.post(comp, dict(base, frobnicate=1, user="u"))
        if status != 200 or r["choices"][0]["text"] != plain["choices"][0]["text"]:
            fail(f"an unknown field: {status} {r} != {plain}")
        srv.post(chat, {"messages": msgs, "max_tokens": 2, "echo": True, "best_of": 2,
                        "a\nb": 1, "x" * 40: 2, "c": 3, "d": None})
    # one warning per request that had unknown fields (null ones and "user" aside), on one
    # line, naming at most four
    lines = [ln for ln in srv.stderr.splitlines() if "ignored" in ln]
    want = ["encore: warn: /v1/completions: the following fields were present in the request but "
            "ignored: 'frobnicate'",
            "encore: warn: /v1/chat/completions: the following fields were present in the request "
            "but ignored: 'echo', 'best_of', 'a?b', '" + "x" * 32 + "...' and 1 more"]
    if lines != want:
        fail(f"the server's warnings about ignored fields: {lines}, want {want}")
    print(f"ok unknown fields: answered as without, one warning line per request: {lines}")


def tokenize(srv, **body):
    status, r, _ = srv.post("/tokenize", body)
    if status != 200:
        fail(f"/tokenize {str(body)[:80]}: {status} {r}")
    return r["tokens"]


def detokenize(srv, ids):
    status, r, _ = srv.post("/detokenize", {"tokens": ids})
    if status != 200:
        fail(f"/detokenize: {status} {r}")
    return r["prompt"]


def completion_key(r):
    """What two completions must share to be the same answer (ids and times aside)."""
    return [(c["index"], c["text"], c["finish_reason"], c["logprobs"]) for c in r["choices"]], \
        {k: r["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def check_continuous_usage(srv):
    """stream_options.continuous_usage_stats with include_usage: every chunk carries its choice's
    usage so far (its prompt's tokens; completion_tokens growing by the tokens the chunk carries,
    counted by its logprobs; a chat's role chunk 0), each choice's last equal to what it
    generated, their sum the final usage (which equals the whole reply's); with include_usage false
    no chunk has a usage."""
    comp, chat = "/v1/completions", "/v1/chat/completions"
    prompts = ["The capital of France is", "Once upon a time"]
    plens = [len(tokenize(srv, prompt=p)) for p in prompts]
    opts = {"include_usage": True, "continuous_usage_stats": True}
    for path, body, lens in [
        (comp, {"prompt": prompts[0], "max_tokens": 9, "logprobs": 0}, plens[:1]),
        (comp, {"prompt": prompts, "n": 2, "max_tokens": 7, "logprobs": 1}, plens),
        (chat, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "logprobs": True},
         [len(tokenize(srv, messages=[{"role": "user", "content": "Hi"}]))]),
    ]:
        body = dict(body, temperature=0, ignore_eos=True)
        status, whole, _ = srv.post(path, body)
        chunks = curl_stream(srv, path, dict(body, stream=True, stream_options=opts))
        n = len(whole["choices"])
        per = n // len(lens)
        done = [0] * n
        for c in chunks[:-1]:
            ch, u = c["choices"][0], c.get("usage")
            i = ch["index"]
            lp = ch.get("logprobs") or {}
            got = len(lp.get("content") or []) if "chat" in path else len(lp.get("tokens", []))
            if not u or u["prompt_tokens"] != lens[i // per] or \
                    u["completion_tokens"] != done[i] + got or \
                    u["total_tokens"] != u["prompt_tokens"] + u["completion_tokens"]:
                fail(f"{path} continuous usage: chunk {c} after {done[i]} tokens of choice {i} "
                     f"(prompt {lens[i // per]})")
            done[i] = u["completion_tokens"]
        final = chunks[-1]["usage"]
        if chunks[-1]["choices"] or final != whole["usage"] or sum(done) != final["completion_tokens"] \
                or done != [body["max_tokens"]] * n:
            fail(f"{path} continuous usage: per choice {done}, final {final} != whole {whole['usage']}")
        if n == 1 and chunks[-2]["usage"] != final:
            fail(f"{path}: the last chunk's usage {chunks[-2]['usage']} != the final {final}")
        print(f"ok {path} continuous_usage_stats: {len(chunks) - 1} chunks, each choice's usage so "
              f"far, per choice {done}, sum = the final usage")
    chunks = curl_stream(srv, comp, {"prompt": prompts[0], "max_tokens": 3, "stream": True,
                                     "stream_options": {"continuous_usage_stats": True,
                                                        "include_usage": False}})
    if any("usage" in c for c in chunks):
        fail(f"continuous_usage_stats with include_usage false: a chunk has a usage: {chunks}")


def check_echo_only(srv):
    """echo with max_tokens 0: the prompt is the text (token ids: their text), nothing generated,
    "length", completion_tokens 0; with logprobs the prompt's entries, equal to those echo with
    max_tokens 1 gives before its one token; streamed the same; a batch with n 2; max_tokens 0
    without echo: 400 naming it."""
    comp = "/v1/completions"
    text = "The capital of France is"
    ids = tokenize(srv, prompt=text)
    other = tokenize(srv, prompt="Once upon a time")
    for prompt, want in ((text, [text]), (other, [detokenize(srv, other)]),
                         ([text, other], [text, detokenize(srv, other)])):
        for lp in (None, 2):
            body = {"prompt": prompt, "max_tokens": 0, "echo": True, "n": 2, "temperature": 1.0}
            if lp is not None:
                body["logprobs"] = lp
            status, r, _ = srv.post(comp, body)
            texts = [c["text"] for c in r.get("choices", [])]
            if status != 200 or texts != [t for t in want for _ in range(2)] or \
                    any(c["finish_reason"] != "length" for c in r["choices"]) or \
                    r["usage"]["completion_tokens"] != 0 or \
                    r["usage"]["prompt_tokens"] != sum(len(tokenize(srv, prompt=t)) for t in want):
                fail(f"echo with max_tokens 0 ({str(prompt)[:40]}, logprobs {lp}): {status} {r}")
            if lp is None and any(c["logprobs"] is not None for c in r["choices"]):
                fail(f"echo with max_tokens 0 without logprobs: {r}")
            if lp is not None:
                one = dict(body, max_tokens=1, temperature=0)
                _, ref, _ = srv.post(comp, one)
                for c, rc in zip(r["choices"], ref["choices"]):
                    n = len(c["logprobs"]["tokens"])
                    cut = {k: v[:n] for k, v in rc["logprobs"].items()}
                    if c["logprobs"] != cut or n != len(rc["logprobs"]["tokens"]) - 1:
                        fail(f"echo max_tokens 0 logprobs {c['logprobs']} != those of max_tokens 1 "
                             f"before its token {rc['logprobs']}")
            streamed = [{"text": "", "tokens": [], "token_logprobs": [], "top_logprobs": [],
                         "text_offset": [], "finish": []} for _ in r["choices"]]
            for c in curl_stream(srv, comp, dict(body, stream=True)):
                for ch in c["choices"]:
                    s = streamed[ch["index"]]
                    s["text"] += ch["text"]
                    for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
                        s[key] += (ch["logprobs"] or {}).get(key, [])
                    if ch["finish_reason"]:
                        s["finish"].append(ch["finish_reason"])
            want_s = [dict(c["logprobs"] or {"tokens": [], "token_logprobs": [], "top_logprobs": [],
                                             "text_offset": []}, text=c["text"], finish=["length"])
                      for c in r["choices"]]
            if streamed != want_s:
                fail(f"echo with max_tokens 0 streamed {streamed} != whole {want_s}")
    print("ok echo with max_tokens 0: the prompt's text (ids: their text), length, no completion "
          "tokens; with logprobs the prompt's, equal to max_tokens 1's before its token; streamed "
          "the same; batch, n 2")
    expect_param(srv, comp, {"prompt": text, "max_tokens": 0}, "max_tokens", "echo")
    expect_param(srv, "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                               "max_tokens": 0}, "max_tokens", "at least 1")


def token_id(name):
    m = re.fullmatch(r"token_id:(\d+)", name)
    if not m:
        fail(f"{name!r} is not \"token_id:N\"")
    return int(m.group(1))


def check_token_ids(srv):
    """return_tokens_as_token_ids: every token and top_logprobs key "token_id:N"; an echoed
    prompt's N are its /tokenize ids; each N's /detokenize text is the token the same request
    gives without it, with the same logprobs, offsets and text; chat: token "token_id:N", the
    chosen token's bytes its text's, an alternative's those of its name (vLLM's); streamed the
    same."""
    comp, chat = "/v1/completions", "/v1/chat/completions"
    text = "The capital of France is"
    ids = tokenize(srv, prompt=text)
    body = {"prompt": text, "max_tokens": 6, "temperature": 0, "logprobs": 3, "echo": True}
    status, plain, _ = srv.post(comp, body)
    status2, named, _ = srv.post(comp, dict(body, return_tokens_as_token_ids=True))
    lp, lq = named["choices"][0]["logprobs"], plain["choices"][0]["logprobs"]
    got = [token_id(t) for t in lp["tokens"]]
    if status != 200 or status2 != 200 or got[:len(ids)] != ids:
        fail(f"return_tokens_as_token_ids: echoed ids {got[:len(ids)]} != /tokenize's {ids}")
    if [detokenize(srv, [n]) for n in got] != lq["tokens"] or lp["token_logprobs"] != lq["token_logprobs"] \
            or lp["text_offset"] != lq["text_offset"] or named["choices"][0]["text"] != plain["choices"][0]["text"]:
        fail(f"return_tokens_as_token_ids: {lp} does not name the tokens of {lq}")
    for chosen, alts, ref in zip(got[1:], lp["top_logprobs"][1:], lq["top_logprobs"][1:]):
        texts = {}
        for name, v in alts.items():  # ids that decode alike are one key without ids, the first
            texts.setdefault(detokenize(srv, [token_id(name)]), v)
        ids_named, values = [token_id(name) for name in alts], list(alts.values())
        among = values[0] >= min(values[1:])  # the chosen token is one of the 3 best, or a 4th key
        if texts != ref or ids_named[0] != chosen or len(alts) != (3 if among else 4):
            fail(f"return_tokens_as_token_ids: alternatives {alts} do not name {ref}")
    streamed = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for c in curl_stream(srv, comp, dict(body, return_tokens_as_token_ids=True, stream=True)):
        for key in streamed:
            streamed[key] += (c["choices"][0]["logprobs"] or {}).get(key, [])
    if streamed != lp:
        fail(f"return_tokens_as_token_ids streamed {streamed} != whole {lp}")
    msgs = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "temperature": 0,
            "logprobs": True, "top_logprobs": 2}
    _, cplain, _ = srv.post(chat, msgs)
    status, cnamed, _ = srv.post(chat, dict(msgs, return_tokens_as_token_ids=True))
    for e, ref in zip(cnamed["choices"][0]["logprobs"]["content"], cplain["choices"][0]["logprobs"]["content"]):
        if detokenize(srv, [token_id(e["token"])]) != ref["token"] or e["bytes"] != ref["bytes"] or \
                e["logprob"] != ref["logprob"] or len(e["top_logprobs"]) != 2:
            fail(f"chat return_tokens_as_token_ids: {e} does not name {ref}")
        for alt, aref in zip(e["top_logprobs"], ref["top_logprobs"]):
            if detokenize(srv, [token_id(alt["token"])]) != aref["token"] or \
                    alt["bytes"] != list(alt["token"].encode()) or alt["logprob"] != aref["logprob"]:
                fail(f"chat return_tokens_as_token_ids: alternative {alt} does not name {aref}")
    print(f"ok return_tokens_as_token_ids: the echoed prompt's names are /tokenize's ids {ids}, every "
          "token and alternative names its own text (completions, chat, streamed)")


def cumulative(choice):
    return sum(choice["logprobs"]["token_logprobs"])


def check_best_of(srv):
    """best_of above n: the n shown are, of the best_of candidates (candidate k of each prompt has
    seed + k, so the same request with n = best_of generates them), those with the
    highest cumulative logprob of their tokens, highest first; usage counts every candidate's
    tokens; without logprobs the same texts; a batch; stream and best_of < n: 400 naming it."""
    comp = "/v1/completions"
    base = {"prompt": "The capital of France is", "max_tokens": 6, "temperature": 1.0, "logprobs": 0}
    for seed in range(1, 40):  # a seed whose best two are not candidates 0 and 1, in order
        status, every, _ = srv.post(comp, dict(base, n=4, seed=seed))
        cands = every["choices"]
        best = sorted(range(4), key=lambda k: -cumulative(cands[k]))[:2]
        if best != [0, 1] and len({cumulative(c) for c in cands}) == 4:
            break
    else:
        fail("no seed in 1..39 gives 4 candidates whose best two are not the first two")
    status, r, _ = srv.post(comp, dict(base, n=2, best_of=4, seed=seed))
    want = [dict(cands[k], index=i) for i, k in enumerate(best)]
    if status != 200 or r["choices"] != want or r["usage"] != every["usage"]:
        fail(f"best_of 4, n 2, seed {seed}: {status} {r} != candidates {best} of n 4: {want}, "
             f"usage {every['usage']}")
    body = {k: v for k, v in base.items() if k != "logprobs"}
    _, bare, _ = srv.post(comp, dict(body, n=2, best_of=4, seed=seed))
    if [c["text"] for c in bare["choices"]] != [c["text"] for c in want] or \
            any(c["logprobs"] is not None for c in bare["choices"]):
        fail(f"best_of without logprobs: {bare} != the texts of {want}, logprobs null")
    print(f"ok best_of 4, n 2 (seed {seed}): candidates {best} shown, the highest cumulative "
          f"logprobs {[round(cumulative(cands[k]), 3) for k in best]} of "
          f"{[round(cumulative(c), 3) for c in cands]}; usage counts all 4")
    prompts = ["Once upon a time", "Hello"]
    status, r, _ = srv.post(comp, dict(base, prompt=prompts, n=1, best_of=3, seed=seed))
    shown, usage = [], 0
    for p, text in enumerate(prompts):
        _, alone, _ = srv.post(comp, dict(base, prompt=text, n=3, seed=seed))
        c = alone["choices"]
        k = max(range(3), key=lambda k: (cumulative(c[k]), -k))
        shown.append(dict(c[k], index=p))
        usage += alone["usage"]["completion_tokens"]
    if status != 200 or r["choices"] != shown or r["usage"]["completion_tokens"] != usage:
        fail(f"a batch with best_of 3: {r} != each prompt's best of 3 {shown}")
    print("ok best_of in a batch: each prompt's best candidate, seeds seed + k")
    expect_param(srv, comp, dict(base, best_of=2, stream=True), "best_of", "cannot be streamed")
    expect_param(srv, comp, dict(base, n=3, best_of=2), "best_of", "at least 'n'")
    status, r, _ = srv.post(comp, dict(base, n=2, best_of=2, seed=seed))
    if status != 200 or r["choices"] != cands[:2]:
        fail(f"best_of == n: {r} != the first two of n 4 {cands[:2]}")


def prompt_logprob(srv, ids, nxt):
    """The logprob of id nxt after ids, scored as an echoed prompt (echo, max_tokens 0)."""
    status, r, _ = srv.post("/v1/completions", {"prompt": ids + [nxt], "max_tokens": 0, "echo": True,
                                                 "logprobs": 0, "return_tokens_as_token_ids": True})
    lp = r["choices"][0]["logprobs"] if status == 200 else None
    if not lp or token_id(lp["tokens"][-1]) != nxt:
        fail(f"scoring {nxt} after {ids}: {status} {r}")
    return lp["token_logprobs"][-1]


def tokenizer_ids(a):
    """The ids of the model's tokenizer.json (those logprobs are over, as vLLM's)."""
    with open(os.path.join(a.models, MODEL, "tokenizer.json")) as f:
        t = json.load(f)
    return 1 + max(max(t["model"]["vocab"].values()), max(x["id"] for x in t.get("added_tokens", [])))


def generated_ids(srv, path, body):
    """The ids a greedy request generates (return_tokens_as_token_ids)."""
    body = dict(body, temperature=0, logprobs=True if path.endswith("chat/completions") else 0,
                return_tokens_as_token_ids=True)
    status, r, _ = srv.post(path, body)
    if status != 200:
        fail(f"{path} {body}: {status} {r}")
    lp = r["choices"][0]["logprobs"]
    return [token_id(t["token"]) for t in lp["content"]] if "content" in lp else [token_id(t) for t in lp["tokens"]]


def has_run(ids, run):
    return any(ids[i:i + len(run)] == run for i in range(len(ids) - len(run) + 1))


def check_bad_words(a):
    """vLLM's bad_words: a one-token word never generated (nor its spelling with a leading
    space, where that is another single token), the greedy reply unchanged before the place it
    took; a two-token word: its first token still comes, the second never after it; chat too;
    an empty, blank or non-string word and too many words are 400s naming the field."""
    with Server(a) as srv:
        check_bad_words_on(srv)


def check_bad_words_on(srv):
    comp, chat = "/v1/completions", "/v1/chat/completions"
    base = {"prompt": "The capital of France is", "max_tokens": 24, "ignore_eos": True}
    plain = generated_ids(srv, comp, base)
    one = [t for t in plain if tokenize(srv, prompt=detokenize(srv, [t])) == [t]]
    if not one:
        fail(f"no generated token of {plain} encodes as itself")
    word = detokenize(srv, [one[0]])
    got = generated_ids(srv, comp, dict(base, bad_words=[word]))
    cut = plain.index(one[0])
    if one[0] in got or got[:cut] != plain[:cut]:
        fail(f"bad_words [{word!r}] (id {one[0]}): {got} against {plain}")
    spaced = [t for t in plain if detokenize(srv, [t]).startswith(" ") and len(tokenize(
        srv, prompt=detokenize(srv, [t]).lstrip())) == 1 and tokenize(srv, prompt=detokenize(srv, [t])) == [t]]
    if not spaced:
        fail(f"no generated token of {plain} is a space and a word of one token")
    bare = detokenize(srv, [spaced[0]]).lstrip()
    got = generated_ids(srv, comp, dict(base, bad_words=[bare]))
    if spaced[0] in got or tokenize(srv, prompt=bare)[0] in got:
        fail(f"bad_words [{bare!r}]: its spelling with a space ({spaced[0]}) came: {got}")
    pairs = [plain[i:i + 2] for i in range(len(plain) - 1)
             if tokenize(srv, prompt=detokenize(srv, plain[i:i + 2])) == plain[i:i + 2]]
    if not pairs:
        fail(f"no two generated tokens of {plain} encode as themselves")
    pair = pairs[0]
    got = generated_ids(srv, comp, dict(base, bad_words=[detokenize(srv, pair)]))
    at = next(i for i in range(len(plain) - 1) if plain[i:i + 2] == pair)
    if has_run(got, pair) or got[:at + 1] != plain[:at + 1]:
        fail(f"bad_words of {pair}: {got} against {plain}")
    msgs = [{"role": "user", "content": "Hi"}]
    cplain = generated_ids(srv, chat, {"messages": msgs, "max_tokens": 8})
    cword = detokenize(srv, [cplain[0]])
    got = generated_ids(srv, chat, {"messages": msgs, "max_tokens": 8, "bad_words": [cword]})
    if cplain[0] in got:
        fail(f"chat bad_words [{cword!r}]: {got}")
    for bad, needle in (([""], "empty"), ([" \n"], "whitespace"), ("x", "array"), ([1], "array"),
                        (["x"] * 257, "at most 256")):
        expect_param(srv, comp, dict(base, bad_words=bad), "bad_words", needle)
    print(f"ok bad_words: one token {one[0]} never, its spaced spelling {spaced[0]} never, "
          f"the pair {pair} broken after its first token, chat; 400s")


def logits_rows(a, ids):
    """Every logit of the tokenizer's ids at every position of the prompt ids, from `encore
    logits` (the same weights, its own path out of the engine): {pos: {id: logit}}."""
    n = tokenizer_ids(a)
    out = subprocess.run([a.encore, "logits", "-m", os.path.join(a.models, MODEL), "--prompt-ids",
                          " ".join(map(str, ids)), "--top", "1000000"], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        fail(f"encore logits: {out.stderr}")
    return {r["pos"]: {i: x for i, x in r["top"] if i < n} for r in map(json.loads, out.stdout.splitlines())}


def check_prompt_position(got, row, token, n_top, what):
    """One position of vLLM's prompt_logprobs against the logits row: the token's entry first,
    its logprob the row's log_softmax, its rank between the ids clearly above it and those
    not clearly below, then n_top alternatives ranked 1.. (the token's rank its place when one
    of them), each among the n_top most likely."""
    eps = 1e-4
    mx = max(row.values())
    lse = mx + math.log(math.fsum(math.exp(v - mx) for v in row.values()))
    lp = {i: v - lse for i, v in row.items()}
    keys = [int(k) for k in got]
    if keys[0] != token:
        fail(f"{what}: the prompt's token {token} is not the first entry: {keys}")
    e = got[str(token)]
    if abs(e["logprob"] - lp[token]) > eps:
        fail(f"{what}: token {token} logprob {e['logprob']} against {lp[token]}")
    above = sum(v > lp[token] + 1e-5 for v in lp.values())
    not_below = sum(v >= lp[token] - 1e-5 for v in lp.values())
    alts = [k for k in keys if k != token or got[str(k)]["rank"] <= n_top]
    if not (above + 1 <= e["rank"] <= not_below):
        fail(f"{what}: token {token} rank {e['rank']}, ids above it {above}, not below {not_below}")
    ranks = sorted(got[str(k)]["rank"] for k in alts)
    if ranks != list(range(1, n_top + 1)) or len(keys) != n_top + (token not in alts):
        fail(f"{what}: {n_top} alternatives ranked 1..{n_top} besides the token: {got}")
    kth = heapq.nlargest(n_top, lp.values())[-1] if n_top else 0
    for k in alts:
        x = got[str(k)]
        if abs(x["logprob"] - lp[k]) > eps or lp[k] < kth - 1e-5:
            fail(f"{what}: alternative {k} {x} against {lp[k]} (the {n_top}th most likely {kth})")


def check_prompt_logprobs(a):
    """vLLM's prompt_logprobs: each prompt token's logprob, rank and alternatives against the
    whole logits rows of `encore logits`; completions per choice (a batch of two prompts, n 2),
    chat once at the top; the same values a second time (the prefix cache skipped) and in an
    echo's logprobs; 0 the token alone."""
    with Server(a) as srv:
        check_prompt_logprobs_on(a, srv)


def check_prompt_logprobs_on(a, srv):
    comp, chat = "/v1/completions", "/v1/chat/completions"
    prompts = [tokenize(srv, prompt=t) for t in ("The capital of France is", "One two three")]
    status, r, _ = srv.post(comp, {"prompt": prompts, "max_tokens": 2, "temperature": 0, "n": 2,
                                   "prompt_logprobs": 3})
    if status != 200 or len(r["choices"]) != 4:
        fail(f"prompt_logprobs 3: {status} {r}")
    for ids, choices in zip(prompts, (r["choices"][:2], r["choices"][2:])):
        rows = logits_rows(a, ids)
        for c in choices:
            pl = c["prompt_logprobs"]
            if len(pl) != len(ids) or pl[0] is not None:
                fail(f"prompt_logprobs of {ids}: {len(pl)} entries, the first {pl[0]}")
            for i in range(1, len(ids)):
                check_prompt_position(pl[i], rows[i - 1], ids[i], 3, f"{ids} position {i}")
        if choices[0]["prompt_logprobs"] != choices[1]["prompt_logprobs"]:
            fail("two choices of one prompt with different prompt_logprobs")
    decoded = r["choices"][0]["prompt_logprobs"][1][str(prompts[0][1])]["decoded_token"]
    if decoded != detokenize(srv, [prompts[0][1]]):
        fail(f"decoded_token {decoded!r} is not /detokenize's")
    again = srv.post(comp, {"prompt": prompts[0], "max_tokens": 1, "temperature": 0,
                            "prompt_logprobs": 3, "echo": True, "logprobs": 2})[1]["choices"][0]
    if again["prompt_logprobs"] != r["choices"][0]["prompt_logprobs"]:
        fail("prompt_logprobs differ the second time (from the prefix cache?)")
    echo = again["logprobs"]
    for i in range(1, len(prompts[0])):
        e = again["prompt_logprobs"][i]
        if echo["token_logprobs"][i] != e[str(prompts[0][i])]["logprob"]:
            fail(f"position {i}: echo's logprob {echo['token_logprobs'][i]} against {e}")
    # an echo's alternatives (3) beside prompt_logprobs 0: the token alone
    r = srv.post(comp, {"prompt": prompts[0], "max_tokens": 1, "temperature": 0, "echo": True,
                        "logprobs": 3, "prompt_logprobs": 0})[1]["choices"][0]
    if any(len(e) != 1 for e in r["prompt_logprobs"][1:]) or len(r["logprobs"]["top_logprobs"][1]) < 3:
        fail(f"echo with logprobs 3 and prompt_logprobs 0: {r['prompt_logprobs']} {r['logprobs']}")
    # echo with max_tokens 0: the prompt scored, nothing generated
    r = srv.post(comp, {"prompt": prompts[0], "max_tokens": 0, "echo": True,
                        "prompt_logprobs": 1})[1]["choices"][0]
    pl = r.get("prompt_logprobs") or []
    if len(pl) != len(prompts[0]) or pl[0] is not None or r["logprobs"] is not None:
        fail(f"echo, max_tokens 0, prompt_logprobs 1: {r}")
    for i in range(1, len(prompts[0])):
        e, ref, tok = pl[i], again["prompt_logprobs"][i], str(prompts[0][i])
        if list(e)[0] != tok or e[tok] != ref[tok] or len(e) > 2:
            fail(f"echo, max_tokens 0, position {i}: {e} against {ref}")
    # the entries one request may ask for: prompt tokens x (K + 1) x n counted
    long_prompt = (prompts[0] * 400)[:2000]
    expect_param(srv, comp, {"prompt": [long_prompt, long_prompt], "n": 16, "max_tokens": 1,
                             "prompt_logprobs": 20}, "prompt_logprobs", "log-probability entries")
    msgs = [{"role": "user", "content": "Hi"}]
    status, r, _ = srv.post(chat, {"messages": msgs, "max_tokens": 2, "temperature": 0,
                                   "prompt_logprobs": 0})
    ids = tokenize(srv, messages=msgs)
    pl = r.get("prompt_logprobs") or []
    if status != 200 or len(pl) != len(ids) or r["usage"]["prompt_tokens"] != len(ids):
        fail(f"chat prompt_logprobs 0: {status} {len(pl)} entries for {len(ids)} tokens")
    rows = logits_rows(a, ids)
    for i in (1, len(ids) // 2, len(ids) - 1):
        check_prompt_position(pl[i], rows[i - 1], ids[i], 0, f"chat position {i}")
    print("ok prompt_logprobs: logprobs, ranks and alternatives of the whole rows; per choice, "
          "chat at the top, an echo's the same")


def check_allowed_ids(srv):
    """allowed_token_ids: every token generated is one of them (seen with
    return_tokens_as_token_ids), sampled and greedy, completions and chat; greedy picks at each
    step the allowed id the model scores highest (each scored on its own as an echoed prompt);
    with guided_choice both apply; ids outside the vocabulary and [] are 400s naming it."""
    comp, chat = "/v1/completions", "/v1/chat/completions"
    ids = tokenize(srv, prompt="The capital of France is")
    allowed = [tokenize(srv, prompt=w)[0] for w in (" Paris", " London", " the", " blue")]
    base = {"max_tokens": 10, "logprobs": 0, "return_tokens_as_token_ids": True, "ignore_eos": True,
            "allowed_token_ids": allowed}
    for temp in (0, 1.0):
        status, r, _ = srv.post(comp, dict(base, prompt=ids, temperature=temp, seed=3, n=2))
        got = [token_id(t) for c in r.get("choices", []) for t in c["logprobs"]["tokens"]]
        if status != 200 or len(got) != 20 or not set(got) <= set(allowed):
            fail(f"allowed_token_ids {allowed}, temperature {temp}: {status} generated {got}")
        if temp == 0:
            greedy = [token_id(t) for t in r["choices"][0]["logprobs"]["tokens"]][:5]
        else:
            sampled = got
    msgs = [{"role": "user", "content": "Hi"}]
    status, r, _ = srv.post(chat, dict(base, messages=msgs, temperature=1.0, logprobs=True))
    got = [token_id(t["token"]) for t in r["choices"][0]["logprobs"]["content"]]
    if status != 200 or len(got) != 10 or not set(got) <= set(allowed):
        fail(f"chat allowed_token_ids {allowed}: {status} generated {got}")
    if len(set(sampled)) < 2:
        fail(f"sampling among {allowed} picked one id only: {sampled}")
    for k, pick in enumerate(greedy):
        scores = {a: prompt_logprob(srv, ids + greedy[:k], a) for a in allowed}
        if pick != max(allowed, key=lambda a: (scores[a], -a)):
            fail(f"greedy step {k} with allowed_token_ids picked {pick}, scores {scores}")
    print(f"ok allowed_token_ids {allowed}: every token among them (sampled {sampled[:10]}, "
          f"chat {got}); greedy picks the best-scored of them at each step ({greedy})")
    no = tokenize(srv, prompt="no")
    ends = tokenize(srv, prompt="<|endoftext|>") + tokenize(srv, prompt="<|im_end|>")
    choice = {"prompt": ids, "max_tokens": 8, "temperature": 1.0, "guided_choice": ["yes", "no"]}
    seed = next((s for s in range(1, 40) if srv.post(comp, dict(choice, seed=s))[1]["choices"][0]["text"] == "yes"),
                None)
    if seed is None:
        fail("guided_choice yes/no never says yes with seeds 1..39")
    status, r, _ = srv.post(comp, dict(choice, seed=seed, allowed_token_ids=no + ends))
    if status != 200 or r["choices"][0]["text"] != "no" or r["choices"][0]["finish_reason"] != "stop":
        fail(f"guided_choice yes/no (yes with seed {seed}) with only no's ids allowed: {status} {r}")
    print("ok allowed_token_ids with guided_choice: both masks apply (\"no\" the one left)")
    expect_param(srv, comp, {"prompt": ids, "max_tokens": 2, "allowed_token_ids": [5, 151936]},
                 "allowed_token_ids", "outside the vocabulary")
    expect_param(srv, comp, {"prompt": ids, "max_tokens": 2, "allowed_token_ids": []},
                 "allowed_token_ids", "empty")


def check_parallel_tool_calls(srv):
    """parallel_tool_calls false: the reply shows its first tool call only (vLLM's), whole and
    streamed, the rest of the reply as with true; tool_choice "required" with ignore_eos makes the
    model write several calls of a tool whose arguments can only be {"x": "a"}."""
    chat = "/v1/chat/completions"
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"enum": ["a"]}}, "required": ["x"],
        "additionalProperties": False}}}
    body = {"messages": [{"role": "user", "content": "Hi"}], "tools": [tool], "tool_choice": "required",
            "max_tokens": 100, "temperature": 0, "ignore_eos": True,
            "chat_template_kwargs": {"enable_thinking": False}}
    status, every, _ = srv.post(chat, body)
    calls = every["choices"][0]["message"].get("tool_calls") or []
    if status != 200 or len(calls) < 2 or any(c["function"]["arguments"] != '{"x":"a"}' for c in calls):
        fail(f"tool_choice required with ignore_eos: {status} {every}, want two calls or more")
    status, first, _ = srv.post(chat, dict(body, parallel_tool_calls=False))
    want = json.loads(json.dumps(every["choices"][0]))
    want["message"]["tool_calls"] = want["message"]["tool_calls"][:1]
    got = first["choices"][0]
    if status != 200 or [c["function"] for c in got["message"]["tool_calls"]] != \
            [c["function"] for c in want["message"]["tool_calls"]] or \
            {k: v for k, v in got["message"].items() if k != "tool_calls"} != \
            {k: v for k, v in want["message"].items() if k != "tool_calls"} or \
            got["finish_reason"] != want["finish_reason"]:
        fail(f"parallel_tool_calls false: {got} != the first call of {want}")
    indexes = [t["index"] for c in curl_stream(srv, chat, dict(body, parallel_tool_calls=False, stream=True))
               for t in (c["choices"][0]["delta"].get("tool_calls") or []) if c["choices"]]
    if not indexes or set(indexes) != {0}:
        fail(f"parallel_tool_calls false, streamed: tool call chunks of indexes {indexes}")
    print(f"ok parallel_tool_calls false: 1 of {len(calls)} calls shown, whole and streamed")


def check_truncate(srv):
    """truncate_prompt_tokens k: the same reply and usage as the prompt's last k ids (from
    /tokenize) sent as the prompt; echo gives the kept tokens' text; each prompt of a batch is
    cut; chat cuts its templated prompt; -1 keeps max_model_len - max_tokens; k past that, 0 and
    -2 are 400s naming it."""
    comp, chat = "/v1/completions", "/v1/chat/completions"
    text = "The capital of France is a city of light and of many bridges"
    ids = tokenize(srv, prompt=text)
    base = {"max_tokens": 6, "temperature": 0, "logprobs": 2, "ignore_eos": True}
    for k in (1, 3, len(ids) - 1, len(ids), len(ids) + 5):
        status, cut, _ = srv.post(comp, dict(base, prompt=text, truncate_prompt_tokens=k))
        status2, want, _ = srv.post(comp, dict(base, prompt=ids[-k:]))
        if status != 200 or status2 != 200 or completion_key(cut) != completion_key(want):
            fail(f"truncate_prompt_tokens {k}: {status} {cut} != the last {k} ids sent: {want}")
        if cut["usage"]["prompt_tokens"] != min(k, len(ids)):
            fail(f"truncate_prompt_tokens {k}: usage {cut['usage']}")
    status, r, _ = srv.post(comp, dict(base, prompt=text, truncate_prompt_tokens=3, echo=True))
    kept = detokenize(srv, ids[-3:])
    if status != 200 or not r["choices"][0]["text"].startswith(kept) or \
            "".join(r["choices"][0]["logprobs"]["tokens"][:3]) != kept or kept == text:
        fail(f"echo with truncate_prompt_tokens 3: {r} does not begin with the kept {kept!r}")
    print(f"ok truncate_prompt_tokens: k of {len(ids)} tokens gives the reply and usage of the "
          f"last k ids sent; echo gives the kept text {kept!r}")
    other = "Once upon a time there was a small dog"
    oids = tokenize(srv, prompt=other)
    status, r, _ = srv.post(comp, dict(base, prompt=[text, other], truncate_prompt_tokens=4))
    status2, want, _ = srv.post(comp, dict(base, prompt=[ids[-4:], oids[-4:]]))
    if status != 200 or completion_key(r) != completion_key(want) or r["usage"]["prompt_tokens"] != 8:
        fail(f"a batch with truncate_prompt_tokens 4: {r} != {want}")
    msgs = [{"role": "user", "content": text}]
    cids = tokenize(srv, messages=msgs)
    status, r, _ = srv.post(chat, {"messages": msgs, "max_tokens": 6, "temperature": 0,
                                   "logprobs": True, "ignore_eos": True, "truncate_prompt_tokens": 5})
    status2, want, _ = srv.post(comp, dict(base, prompt=cids[-5:]))
    got = [t["token"] for t in r["choices"][0]["logprobs"]["content"]]
    if status != 200 or got != want["choices"][0]["logprobs"]["tokens"] or r["usage"]["prompt_tokens"] != 5:
        fail(f"chat with truncate_prompt_tokens 5: {got} {r['usage']} != the last 5 ids' "
             f"{want['choices'][0]['logprobs']['tokens']}")
    print("ok truncate_prompt_tokens: each prompt of a batch cut, chat's templated prompt cut")
    long_ids = tokenize(srv, prompt="a b c d e f g h i j " * 10) * 3  # /tokenize stops at max_model_len
    if len(long_ids) <= 256:
        fail(f"the long prompt has {len(long_ids)} tokens, not more than max_model_len 256")
    status, r, _ = srv.post(comp, {"prompt": long_ids, "max_tokens": 4, "temperature": 0,
                                   "truncate_prompt_tokens": -1})
    status2, want, _ = srv.post(comp, {"prompt": long_ids[-252:], "max_tokens": 4, "temperature": 0})
    if status != 200 or completion_key(r) != completion_key(want) or r["usage"]["prompt_tokens"] != 252:
        fail(f"truncate_prompt_tokens -1, max_tokens 4, max_model_len 256: {r} != {want}")
    print("ok truncate_prompt_tokens -1 keeps max_model_len - max_tokens = 252 tokens")
    for k, needle in ((253, "more than max_model_len"), (0, "at least 1"), (-2, "[-1,")):
        expect_param(srv, comp, {"prompt": text, "max_tokens": 4, "truncate_prompt_tokens": k},
                     "truncate_prompt_tokens", needle)


def check_openai(a):
    run_openai_client(a)


def check_openai_logprobs(a):
    run_openai_client(a, "logprobs")


def check_openai_tools(a):
    run_openai_client(a, "tools")


def check_openai_responses(a):
    run_openai_client(a, "responses")


def check_openai_embeddings(a):
    global MODEL
    MODEL = "tiny-embedding-qwen3vocab"  # an embedding model: serve picks the pooling runner
    run_openai_client(a, "embeddings")


def check_openai_keepalive(a):
    run_openai_client(a, "keepalive", server=slow_server(a))


def run_check(doc, names):
    """Parse the arguments and run the check named, check_NAME in `names`
    (a module's globals), under DEADLINE_S."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--encore", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--node", default="node")
    ap.add_argument("--node-dir", help="the prefix npm installed openai into")
    ap.add_argument("check", choices=[n[len("check_"):] for n in names if n.startswith("check_")])
    a = ap.parse_args()
    timer = threading.Timer(DEADLINE_S, deadline_passed)
    timer.daemon = True
    timer.start()
    names["check_" + a.check](a)


def main():
    run_check(__doc__, globals())


if __name__ == "__main__":
    main()
