#!/usr/bin/env python3
"""server_embeddings.py - POST /v1/embeddings on an embedding model (`encore serve
--runner pooling`, chosen by itself for a sentence-transformers checkpoint).

    server_embeddings.py --encore BIN --models DIR CHECK

The model is tiny-embedding-qwen3vocab, laid out as Qwen3-Embedding ships: tensor
names without "model.", no lm_head (untied), modules.json with a last-token Pooling
module, and a tokenizer whose post-processor appends <|endoftext|> (151643).

  values   each vector against the NumPy float64 reference (tests/reference/
           qwen3_ref.py: the final norm's hidden state of the last token, scaled to
           unit length), to 1e-3 per component (with the KV cache rounded to bf16 as the
           server keeps it) and a cosine above 0.99999: a text
           (its ids from /tokenize with add_special_tokens false, then 151643,
           which the server must append, as /tokenize does by default),
           the same with add_special_tokens false (no 151643), token ids as
           given; dimensions 16 (the first 16 of the raw state, then unit length);
           normalize false (the raw state, to 1e-3 relative); usage counts the
           tokens with the appended one
  batch    a batch of six inputs (texts and ids) in one request, each vector equal
           to the same input sent alone, bit for bit; the same again with a shared
           prefix (the prefix cache serves it); base64 is the float list's exact
           little-endian float32 bytes; 24 requests from 8 threads at once, each
           equal to its answer alone; a batch of 300 (past one client's share of
           --max-queue: the request counts one); `encore run-batch` of /v1/embeddings lines
  errors   the 400s naming the field (no input, an empty list of ids, an id
           outside the vocabulary, an input past max_model_len and the same cut by
           truncate_prompt_tokens, truncate_prompt_tokens past max_model_len, dimensions 0 or past the width, an
           encoding_format of neither kind, a batch past 2048), another model's
           name (404), completions and chat on the embedding model and
           /v1/embeddings on a generative one ("does not support ... API"),
           --runner generate on the embedding model (no lm_head: refused at start)
  special  a generative model whose tokenizer's post-processor appends
           <|endoftext|> (tiny-qwen3vocab with the embedding model's tokenizer.json):
           /tokenize and /v1/completions add it to a text prompt unless
           add_special_tokens is false (vLLM's defaults), chat never
Uses server_e2e.py's Server."""
import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import server_e2e  # noqa: E402
from server_e2e import Server, fail, run_check, tokenize  # noqa: E402
import qwen3_ref  # noqa: E402

EMB_MODEL = "tiny-embedding-qwen3vocab"
ENDOFTEXT = 151643
TOL = 1e-3


def emb_server(a, *extra):
    server_e2e.MODEL = EMB_MODEL  # Server starts the model server_e2e.MODEL names
    return Server(a, *extra)


def embed(srv, body, status=200):
    got, out, _ = srv.post("/v1/embeddings", body)
    if got != status:
        fail(f"{body}: {got} {out}, wanted {status}")
    return out


def vectors(out):
    if out.get("object") != "list" or [d["index"] for d in out["data"]] != list(range(len(out["data"]))):
        fail(f"not a list of embeddings in order: {str(out)[:300]}")
    if any(d["object"] != "embedding" for d in out["data"]):
        fail(f"an item is not an embedding: {str(out)[:300]}")
    return [np.array(d["embedding"], dtype=np.float64) for d in out["data"]]


def unit(v):
    return v / np.linalg.norm(v)


def close(got, want, what, relative=False):
    scale = np.max(np.abs(want)) if relative else 1.0
    err = np.max(np.abs(got - want)) / scale
    cos = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
    if got.shape != want.shape or err > TOL or cos < 0.99999:
        fail(f"{what}: {len(got)} values, max difference {err:.2e} (at most {TOL}), cosine {cos:.7f}")
    print(f"ok: {what}: max difference {err:.1e}, cosine {cos:.7f}")


def check_values(a):
    model = qwen3_ref.load_model(os.path.join(a.models, EMB_MODEL))
    model.kv_cache_dtype = "bf16"  # the server's KV cache for a bf16 model
    with emb_server(a) as srv:
        text = "The quick brown fox jumps over the lazy dog."
        plain = tokenize(srv, prompt=text, add_special_tokens=False)
        ids = plain + [ENDOFTEXT]
        if tokenize(srv, prompt=text) != ids:
            fail("/tokenize (add_special_tokens by default) does not append <|endoftext|>")
        raw = qwen3_ref.last_hidden(model, ids)
        out = embed(srv, {"model": EMB_MODEL, "input": text})
        close(vectors(out)[0], unit(raw), "a text, <|endoftext|> appended")
        if out["usage"] != {"prompt_tokens": len(ids), "total_tokens": len(ids)}:
            fail(f"usage {out['usage']}, wanted {len(ids)} tokens")
        close(vectors(embed(srv, {"input": text, "add_special_tokens": False}))[0],
              unit(qwen3_ref.last_hidden(model, plain)), "add_special_tokens false")
        given = [785, 6722, 315, 9625, 374]
        close(vectors(embed(srv, {"input": given}))[0], unit(qwen3_ref.last_hidden(model, given)),
              "token ids as given")
        close(vectors(embed(srv, {"input": text, "dimensions": 16}))[0], unit(raw[:16]), "dimensions 16")
        close(vectors(embed(srv, {"input": text, "normalize": False}))[0], raw, "normalize false",
              relative=True)


def check_batch(a):
    inputs = ["Hello", "The capital of France is", [785, 6722, 315], "Hello there, general",
              [9707, 11, 1879, 0, 1], "x"]
    with emb_server(a, "--max-num-seqs", "4") as srv:
        alone = [vectors(embed(srv, {"input": x}))[0] for x in inputs]
        together = vectors(embed(srv, {"input": inputs}))
        if len(together) != len(inputs) or any(not np.array_equal(u, v) for u, v in zip(alone, together)):
            fail("a batch's vectors differ from the same inputs sent alone")
        again = vectors(embed(srv, {"input": inputs}))  # their blocks from the prefix cache now
        if any(not np.array_equal(u, v) for u, v in zip(alone, again)):
            fail("the same batch again (prefix cache) gave other vectors")
        b64 = embed(srv, {"input": inputs, "encoding_format": "base64"})["data"]
        for item, want in zip(b64, alone):
            raw = base64.b64decode(item["embedding"], validate=True)
            got = np.frombuffer(raw, dtype="<f4")  # 9 digits give a float32 back exactly
            if not np.array_equal(got, want.astype(np.float32)):
                fail(f"base64 {item['embedding'][:40]}... is not the float list's bytes")
        print(f"ok: {len(inputs)} inputs in one request, again, and in base64: each its vector alone")
        wide = [f"item {k}" for k in range(300)]  # more than one client's share of --max-queue
        out = vectors(embed(srv, {"input": wide}))
        if len(out) != 300 or not np.array_equal(out[7], vectors(embed(srv, {"input": wide[7]}))[0]):
            fail("a batch of 300 inputs: not 300 vectors, or item 7's not its own")
        print("ok: a batch of 300 inputs in one request")
        results, errors = {}, []

        def worker(t):
            for k in range(3):
                i = (t + k) % len(inputs)
                try:
                    results[(t, k)] = (i, vectors(embed(srv, {"input": inputs[i]}))[0])
                except SystemExit as e:
                    errors.append(str(e))
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            fail(errors[0])
        if len(results) != 24 or any(not np.array_equal(v, alone[i]) for i, v in results.values()):
            fail("requests at once gave other vectors than alone")
        print("ok: 24 requests from 8 threads at once, each its vector alone")
    lines = "".join(json.dumps({"custom_id": f"e{i}", "method": "POST", "url": "/v1/embeddings",
                                "body": {"input": x}}) + "\n" for i, x in enumerate(inputs))
    p = subprocess.run([a.encore, "run-batch", "-m", os.path.join(a.models, EMB_MODEL), "-i", "-", "-o", "-"],
                       input=lines, capture_output=True, text=True, timeout=180)
    got = [json.loads(line) for line in p.stdout.splitlines()]
    if p.returncode != 0 or len(got) != len(inputs):
        fail(f"run-batch of embeddings: exit {p.returncode}, {p.stderr[-300:]}")
    for o, want in zip(got, alone):
        if o["response"]["status_code"] != 200 or not np.array_equal(vectors(o["response"]["body"])[0], want):
            fail(f"run-batch's {o['custom_id']} is not the server's vector: {str(o)[:200]}")
    print(f"ok: run-batch's {len(inputs)} embeddings, each the server's")


def check_errors(a):
    with emb_server(a, "--max-model-len", "64") as srv:
        long_text = " ".join(["word"] * 100)
        cases = [
            ({}, 400, "input", "'input' is required"),
            ({"input": [[]]}, 400, "input", "is empty"),
            ({"input": ["x", [1, 151936]]}, 400, "input", "'input' item 1: token 151936 is outside"),
            ({"input": "x", "truncate_prompt_tokens": 65}, 400, "truncate_prompt_tokens", "max_model_len"),
            ({"input": long_text}, 400, "input", "maximum context length is 64"),
            ({"input": "x", "dimensions": 0}, 400, "dimensions", "dimensions"),
            ({"input": "x", "dimensions": 65}, 400, "dimensions", "embedding width (64)"),
            ({"input": "x", "encoding_format": "hex"}, 400, "encoding_format", "base64"),
            ({"input": ["x"] * 2049}, 400, "input", "at most 2048"),
            ({"input": "x", "model": "other"}, 404, "model", "other"),
        ]
        for body, status, param, needle in cases:
            err = embed(srv, body, status)["error"]
            if (param and err.get("param") != param) or needle not in err["message"]:
                fail(f"{str(body)[:60]}: {err}, wanted param {param} and {needle!r}")
        out = embed(srv, {"input": long_text, "truncate_prompt_tokens": 8})
        if out["usage"]["prompt_tokens"] != 8:
            fail(f"truncate_prompt_tokens 8: {out['usage']}")
        for path, body, api in (("/v1/completions", {"prompt": "x"}, "Completions"),
                                ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]},
                                 "Chat Completions")):
            status, out, _ = srv.post(path, body)
            if status != 400 or f"does not support {api} API" not in out["error"]["message"]:
                fail(f"{path} on an embedding model: {status} {out}")
        print(f"ok: {len(cases)} refusals, truncation, generation refused on the embedding model")
    server_e2e.MODEL = "tiny-qwen3vocab"
    with Server(a) as srv:
        status, out, _ = srv.post("/v1/embeddings", {"input": "x"})
        if status != 400 or "does not support Embeddings API" not in out["error"]["message"]:
            fail(f"/v1/embeddings on a generative model: {status} {out}")
    p = subprocess.run([a.encore, "serve", "-m", os.path.join(a.models, EMB_MODEL), "--port", "0",
                        "--runner", "generate"], capture_output=True, text=True, timeout=120)
    if p.returncode == 0 or "no lm_head.weight" not in p.stderr or "--runner pooling" not in p.stderr:
        fail(f"--runner generate on an embedding model: exit {p.returncode}, {p.stderr[-400:]}")
    print("ok: embeddings refused on a generative model; --runner generate refused without lm_head")


def check_special(a):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(a.models, "tiny-qwen3vocab"), os.path.join(d, "tiny-qwen3vocab")
        os.makedirs(dst)
        for name in os.listdir(src):
            tok = name == "tokenizer.json"
            os.symlink(os.path.abspath(os.path.join(a.models, EMB_MODEL) if tok else src) + "/" + name,
                       os.path.join(dst, name))
        server_e2e.MODEL = "tiny-qwen3vocab"
        with Server(argparse.Namespace(**dict(vars(a), models=d))) as srv:
            text = "The capital of France is"
            plain = tokenize(srv, prompt=text, add_special_tokens=False)
            if tokenize(srv, prompt=text) != plain + [ENDOFTEXT]:
                fail(f"/tokenize of {text!r}: no <|endoftext|> after {plain}")
            for add, want in ((None, len(plain) + 1), (True, len(plain) + 1), (False, len(plain))):
                body = {"prompt": text, "max_tokens": 1, "temperature": 0}
                if add is not None:
                    body["add_special_tokens"] = add
                status, out, _ = srv.post("/v1/completions", body)
                if status != 200 or out["usage"]["prompt_tokens"] != want:
                    fail(f"completions, add_special_tokens {add}: {status} {out}, wanted {want} prompt tokens")
            msgs = [{"role": "user", "content": text}]
            status, out, _ = srv.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 1})
            if status != 200 or out["usage"]["prompt_tokens"] != len(tokenize(srv, messages=msgs)):
                fail(f"chat: {status} {out}: a chat prompt takes no special tokens")
    print("ok: the post-processor's <|endoftext|> in /tokenize and completions by default, not in chat")


if __name__ == "__main__":
    run_check(__doc__, globals())
