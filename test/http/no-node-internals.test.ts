/**
 * voxd's sources use node's public API only (issue 24): no private fields of node objects
 * (node:http's socket.parser and its getCurrentBuffer(), a socket's _handle, a stream's
 * _readableState), no internal modules (_http_*, _stream_*, internal/*), no native bindings. A
 * grep over src/, since what it looks for never type-checks by accident: each one is reached by a
 * cast that tsc cannot see through.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

/** What reaches into node, with why it is out. */
const FORBIDDEN: [RegExp, string][] = [
  [/\.parser\b/, "node:http's HTTP parser on a socket (socket.parser)"],
  [/\bgetCurrentBuffer\b/, "node:http's parser's current read buffer"],
  [/\bkIncoming\b/, "node:http's private symbol for a socket's request"],
  [/\._handle\b/, "a socket's libuv handle"],
  [/\._(readable|writable)State\b/, "a stream's private state"],
  [/\._events\b/, "an emitter's private listener table"],
  [/\b(internalBinding|process\.binding)\b/, "node's native bindings"],
  [/from\s+['"](node:)?(_http_|_stream_|_tls_|internal\/)/, 'an internal node module'],
  [/require\(\s*['"](node:)?(_http_|_stream_|_tls_|internal\/)/, 'an internal node module'],
];

/** `path:line: text (why)` for every forbidden use in `text`. */
function scan(path: string, text: string): string[] {
  const found: string[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    for (const [pattern, why] of FORBIDDEN) {
      if (pattern.test(line)) found.push(`${path}:${i + 1}: ${line.trim()} (${why})`);
    }
  }
  return found;
}

function sources(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((p) => /\.(ts|js|mjs|cjs)$/.test(p))
    .sort();
}

describe('no node internals in src/', () => {
  test('the scan catches what it looks for (the live body reader as it once read the parser)', () => {
    const old = [
      'const parser = (req.socket as unknown as { parser?: ParserLike } | null)?.parser;',
      '    current = parser.getCurrentBuffer();',
      "import { kIncoming } from '_http_common';",
      'const fd = (socket as any)._handle.fd;',
    ].join('\n');
    assert.deepEqual(
      scan('old.ts', old).map((f) => f.split(':').slice(0, 2).join(':')),
      ['old.ts:1', 'old.ts:2', 'old.ts:3', 'old.ts:3', 'old.ts:4'],
    );
  });

  test('src/ uses none of them', () => {
    const files = sources();
    assert.ok(files.length > 50, `found only ${files.length} source files under ${SRC}`);
    const found = files.flatMap((p) => scan(p, readFileSync(join(SRC, p), 'utf8')));
    assert.deepEqual(found, []);
  });
});
