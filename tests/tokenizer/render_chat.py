#!/usr/bin/env python3
"""render_chat.py - render chat conversations with the model's own Jinja template.

    python3 render_chat.py [--parse-arguments] TOKENIZER_CONFIG CASES.json OUT.json

The reference for encore's native chat template: tokenizer_config.json's
chat_template rendered by Jinja2 (Debian's python3-jinja2) set up the way
Hugging Face transformers sets it up (transformers/utils/chat_template_utils.py,
_compile_jinja_template and render_jinja_template):

  - ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
    the loopcontrols extension;
  - a tojson filter that is json.dumps(x, ensure_ascii=False, ...) (Jinja's
    own tojson would HTML-escape);
  - raise_exception(msg) and strftime_now(fmt) as globals;
  - render(messages=..., tools=..., documents=None, add_generation_prompt=...,
    **special_tokens_map, **extra kwargs) - enable_thinking is passed only
    when a case sets it, as an extra kwarg is.

(transformers also adds an AssistantTracker extension for {% generation %}
blocks, which only marks assistant spans; Qwen3's template has none.)

CASES.json is {"cases": [{"messages", "tools"? or "tools_text"?,
"add_generation_prompt", "enable_thinking"?, "continue_final_message"?}],
"tojson": [JSON text, ...]}; tools_text is the tools as JSON text (parsed
here, so that a number keeps its spelling's type: 1.5e3 is a float);
continue_final_message cuts the text after the last message's stripped
content, as transformers' apply_chat_template does. With --parse-arguments
a tool call's arguments given as JSON text are parsed first, as vLLM does
before it renders (templates that iterate the arguments, Qwen3-Coder's,
need a mapping). OUT.json gets {"renders": [text per case, or null where
the template raised an error], "tojson": [tojson(json.loads(t)) per text]}.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def special_tokens_map(config):
    """The tokens transformers passes to the template (special_tokens_map)."""
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                "cls_token", "mask_token", "additional_special_tokens"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None:
            out[key] = value
    return out


def parse_arguments(messages):
    """vLLM's preprocessing: each tool call's arguments text json.loads'ed."""
    for m in messages:
        for call in m.get("tool_calls") or []:
            fn = call.get("function", call)
            if isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.loads(fn["arguments"])


def render(template, specials, case, parse_args=False):
    if parse_args:
        parse_arguments(case["messages"])
    tools = case.get("tools")
    if "tools_text" in case:
        tools = json.loads(case["tools_text"])
    kwargs = dict(specials)
    if case.get("enable_thinking") is not None:
        kwargs["enable_thinking"] = case["enable_thinking"]
    text = template.render(messages=case["messages"], tools=tools,
                           documents=None,
                           add_generation_prompt=case["add_generation_prompt"],
                           **kwargs)
    if case.get("continue_final_message"):
        # transformers' apply_chat_template(continue_final_message=True)
        final = case["messages"][-1]["content"].strip()
        text = text[:text.rindex(final) + len(final)]
    return text


def render_or_none(template, specials, case, parse_args):
    """The render, or None where the template raises (a TypeError of a filter too)."""
    try:
        return render(template, specials, case, parse_args)
    except (jinja2.exceptions.TemplateError, TypeError, ValueError):
        return None


def main():
    args = sys.argv[1:]
    parse_args = "--parse-arguments" in args
    args = [a for a in args if a != "--parse-arguments"]
    if len(args) != 3:
        sys.exit("usage: render_chat.py [--parse-arguments] TOKENIZER_CONFIG CASES.json OUT.json")
    with open(args[0], encoding="utf-8") as f:
        config = json.load(f)
    with open(args[1], encoding="utf-8") as f:
        cases = json.load(f)
    template = compile_template(config["chat_template"])
    specials = special_tokens_map(config)
    out = {
        "renders": [render_or_none(template, specials, c, parse_args) for c in cases["cases"]],
        "tojson": [tojson(json.loads(t)) for t in cases["tojson"]],
    }
    with open(args[2], "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
