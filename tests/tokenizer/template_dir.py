#!/usr/bin/env python3
"""template_dir.py - a tokenizer directory with another chat template.

    python3 template_dir.py TOKENIZER_DIR TEMPLATE.jinja OUT_DIR

OUT_DIR gets TOKENIZER_DIR's tokenizer.json and its tokenizer_config.json with
chat_template replaced by TEMPLATE.jinja's text: the real Qwen3 tokenizer
under the template of another Qwen3 release (templates/: the Qwen3-2507
Instruct and Thinking ones), for render_chat.py and chat_test.c.
"""
import json
import os
import shutil
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: template_dir.py TOKENIZER_DIR TEMPLATE.jinja OUT_DIR")
    src, template, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(os.path.join(src, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with open(template, encoding="utf-8") as f:
        config["chat_template"] = f.read()
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
