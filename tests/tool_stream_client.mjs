// tool_stream_client.mjs - tool calls as the official `openai` npm package
// assembles them from encore's chunks.
//
//   node tool_stream_client.mjs NODE_PREFIX TOOL_SSE
//
// For each crafted reply and several piece sizes, TOOL_SSE (tests/tool_sse.c)
// writes the SSE stream and the whole reply that the server's parser and
// reply objects make; a local HTTP server hands them to the package, whose
// whole reply, ChatCompletionStream and plain delta loop must all give the
// calls written in the reply (names, arguments as compact JSON) and its text.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [prefix, toolSse] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(prefix), 'package.json'));
const OpenAI = require('openai');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tool-sse-'));
const sseFile = path.join(dir, 'stream'), jsonFile = path.join(dir, 'whole');

function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAIL: ${what}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    const stream = JSON.parse(body).stream;
    res.writeHead(200, { 'Content-Type': stream ? 'text/event-stream' : 'application/json' });
    res.end(fs.readFileSync(stream ? sseFile : jsonFile));
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'unused',
                            maxRetries: 0 });

const call = (name, args) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
const cases = [
  { text: call('get_weather', '{"city": "Paris", "unit": "celsius"}'), content: null,
    calls: [['get_weather', '{"city":"Paris","unit":"celsius"}']] },
  { text: 'Let me check both.\n\n' + call('get_weather', '{"city": "Zürich"}') + '\n' +
          call('get_time', '{"tz": "Europe/Zurich", "fmt": [ "h", "m" ]}'),
    content: 'Let me check both.',
    calls: [['get_weather', '{"city":"Zürich"}'], ['get_time', '{"tz":"Europe/Zurich","fmt":["h","m"]}']] },
  { text: '<tool_call>\n{"name": "broken", "arguments": {oops}}\n</tool_call>',
    content: '<tool_call>\n{"name": "broken", "arguments": {oops}}\n</tool_call>', calls: [] },
];
const req = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
for (const [i, c] of cases.entries()) {
  for (const step of [1, 2, 5, 16, 100000]) {
    execFileSync(toolSse, [c.text, String(step), sseFile, jsonFile]);
    const whole = await client.chat.completions.create(req);
    const final = await client.beta.chat.completions.stream(req).finalChatCompletion();
    let content = null, finish = null;
    const calls = [];
    for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
      const d = chunk.choices[0].delta;
      if (d.content) content = (content ?? '') + d.content;
      for (const t of d.tool_calls ?? []) {
        calls[t.index] ??= { id: t.id, name: '', arguments: '' };
        calls[t.index].name += t.function?.name ?? '';
        calls[t.index].arguments += t.function?.arguments ?? '';
      }
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    const want = c.calls.map(([name, args]) => [name, args]);
    const got = (m) => (m.tool_calls ?? []).map((t) => [t.function.name, t.function.arguments]);
    const wantFinish = c.calls.length ? 'tool_calls' : 'stop';
    for (const [what, m, f] of [['whole reply', whole.choices[0].message, whole.choices[0].finish_reason],
                                ['ChatCompletionStream', final.choices[0].message, final.choices[0].finish_reason]]) {
      check(JSON.stringify(got(m)) === JSON.stringify(want) && (m.content ?? null) === c.content && f === wantFinish &&
            (m.tool_calls ?? []).every((t, k) => t.id === `call_${k}` && t.type === 'function'),
            `case ${i} step ${step}: ${what}`, m);
    }
    check(JSON.stringify(calls.map((t) => [t.name, t.arguments])) === JSON.stringify(want) &&
          content === c.content && finish === wantFinish, `case ${i} step ${step}: deltas`, { calls, content });
  }
  console.log(`ok reply ${i}: ${c.calls.length} calls assembled the same, whole and streamed in pieces of 1..all bytes`);
}
server.close();
fs.rmSync(dir, { recursive: true });
