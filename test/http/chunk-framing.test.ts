/**
 * The chunked framing parser on its own, without sockets: whole bodies, byte by byte and in seeded
 * random splits, with what it must refuse and where it must stop.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bodyStart, ChunkFraming, type FramingIssue } from '../../src/http/chunk-framing.js';
import { mulberry32 } from '../helpers/prng.js';

const NO_LIMIT = Number.POSITIVE_INFINITY;

function bytes(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

interface Fed {
  /** Bytes taken over all the pieces. */
  used: number;
  issue?: FramingIssue;
  /** Offset in the whole input of the byte that revealed the issue. */
  issueAt?: number;
}

/** Feeds the pieces in order, stopping at the first issue, as the reader does. */
function feedPieces(framing: ChunkFraming, pieces: Buffer[]): Fed {
  let used = 0;
  let offset = 0;
  for (const piece of pieces) {
    const result = framing.feed(piece);
    used += result.used;
    if (result.issue) return { used, issue: result.issue, issueAt: offset + result.used };
    offset += piece.length;
  }
  return { used };
}

/** The input cut at `cuts` (offsets, any order). */
function cutAt(input: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts)].filter((c) => c > 0 && c < input.length).sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const point of [...points, input.length]) {
    pieces.push(input.subarray(from, point));
    from = point;
  }
  return pieces;
}

/** Every way the tests split an input: whole, byte by byte, and 40 seeded random splits. */
function splits(input: Buffer, seed: number): { name: string; pieces: Buffer[] }[] {
  const out = [
    { name: 'whole', pieces: [input] },
    { name: 'byte by byte', pieces: cutAt(input, [...input.keys()]) },
  ];
  const random = mulberry32(seed);
  for (let n = 0; n < 40; n++) {
    const count = 1 + Math.floor(random() * 8);
    const cuts = Array.from({ length: count }, () => Math.floor(random() * input.length));
    out.push({ name: `split at ${cuts.join(',')} (seed ${seed})`, pieces: cutAt(input, cuts) });
  }
  return out;
}

/** What follows a body on a kept-alive connection: never part of the body. */
const NEXT_REQUEST = 'GET /next HTTP/1.1\r\nHost: voxd\r\n\r\n';

describe('chunk framing: valid bodies', () => {
  const cases: { name: string; body: string; dataBytes: number; chunks: number }[] = [
    { name: 'one chunk', body: '5\r\nhello\r\n0\r\n\r\n', dataBytes: 5, chunks: 1 },
    { name: 'several chunks', body: '3\r\nabc\r\n1\r\nd\r\n4\r\nefgh\r\n0\r\n\r\n', dataBytes: 8, chunks: 3 },
    { name: 'no data at all', body: '0\r\n\r\n', dataBytes: 0, chunks: 0 },
    {
      name: 'upper and lower case hex, leading zeros',
      body: `A\r\n${'x'.repeat(10)}\r\n00b\r\n${'y'.repeat(11)}\r\n000\r\n\r\n`,
      dataBytes: 21,
      chunks: 2,
    },
    {
      name: 'chunk extensions, on data chunks and on the last one',
      body: '5;name=value\r\nhello\r\n2;a;b="q;\\"x"\r\nhi\r\n0;last=1\r\n\r\n',
      dataBytes: 7,
      chunks: 2,
    },
    {
      name: 'blanks between a size and its extension or line end',
      body: '5 \t;x\r\nhello\r\n2 \r\nhi\r\n0\r\n\r\n',
      dataBytes: 7,
      chunks: 2,
    },
    {
      name: 'trailers after the terminating chunk',
      body: '5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n',
      dataBytes: 5,
      chunks: 1,
    },
    {
      name: 'data that looks like framing',
      body: '8\r\n0\r\n\r\n0\r\n\r\n0\r\n\r\n',
      dataBytes: 8,
      chunks: 1,
    },
    { name: 'bare LF where CRLF belongs', body: '5\nhello\n0\n\n', dataBytes: 5, chunks: 1 },
  ];
  cases.forEach(({ name, body, dataBytes, chunks }, index) => {
    test(`${name}: fed whole, byte by byte and in random splits`, () => {
      const input = bytes(body + NEXT_REQUEST);
      for (const split of splits(input, 1000 + index)) {
        const framing = new ChunkFraming(NO_LIMIT);
        const fed = feedPieces(framing, split.pieces);
        assert.equal(fed.issue, undefined, split.name);
        assert.equal(framing.done, true, split.name);
        assert.equal(framing.phase, 'end', split.name);
        assert.equal(fed.used, body.length, `${split.name}: stops at the end of the body`);
        assert.equal(framing.dataBytes, dataBytes, split.name);
        assert.equal(framing.chunks, chunks, split.name);
      }
    });
  });

  test('the phase at each boundary of a body', () => {
    const framing = new ChunkFraming(NO_LIMIT);
    const steps: [string, string][] = [
      ['5;a', 'size'],
      ['=b\r\n', 'data'],
      ['hel', 'data'],
      ['lo', 'after-data'],
      ['\r\n', 'size'],
      ['0\r\n', 'trailers'],
      ['X-T: 1\r\n', 'trailers'],
      ['\r', 'trailers'],
      ['\n', 'end'],
    ];
    for (const [piece, phase] of steps) {
      assert.deepEqual(framing.feed(bytes(piece)), { used: piece.length }, piece);
      assert.equal(framing.phase, phase, `after ${JSON.stringify(piece)}`);
    }
    assert.equal(framing.dataBytes, 5);
  });

  test('a size at the limit is allowed', () => {
    const framing = new ChunkFraming(8);
    const fed = feedPieces(framing, [bytes('8\r\n12345678\r\n0\r\n\r\n')]);
    assert.equal(fed.issue, undefined);
    assert.equal(framing.done, true);
    assert.equal(framing.dataBytes, 8);
  });

  test('without a limit, 2^64-1 is a size like any other (node:http accepts it too)', () => {
    const framing = new ChunkFraming(NO_LIMIT);
    assert.deepEqual(framing.feed(bytes('ffffffffffffffff\r\nabc')), { used: 21 });
    assert.equal(framing.phase, 'data');
    assert.equal(framing.dataBytes, 3);
  });
});

describe('chunk framing: the terminating chunk', () => {
  test('its size line alone is not the end: the empty line after it (or after trailers) is', () => {
    const framing = new ChunkFraming(NO_LIMIT);
    assert.deepEqual(framing.feed(bytes('2\r\nab\r\n0\r\n')), { used: 10 });
    assert.equal(framing.done, false);
    assert.equal(framing.phase, 'trailers');
    assert.deepEqual(framing.feed(bytes('X: 1\r\n')), { used: 6 });
    assert.equal(framing.done, false);
    assert.deepEqual(framing.feed(bytes('\r\n')), { used: 2 });
    assert.equal(framing.done, true);
  });

  test('nothing after the end is taken, in the same read or a later one', () => {
    const framing = new ChunkFraming(NO_LIMIT);
    assert.deepEqual(framing.feed(bytes('0\r\n\r\nzz\r\n')), { used: 5 });
    assert.deepEqual(framing.feed(bytes('more')), { used: 0 });
    assert.equal(framing.done, true);
    assert.equal(framing.dataBytes, 0);
  });
});

describe('chunk framing: malformed framing', () => {
  const malformed: [string, string, string, number][] = [
    ['zz', 'zz\r\n', 'expected a hexadecimal chunk size, got "z"', 0],
    ['-1', '-1\r\n', 'expected a hexadecimal chunk size, got "-"', 0],
    ['a leading blank', ' 5\r\nhello\r\n', 'expected a hexadecimal chunk size, got byte 0x20', 0],
    ['a leading tab', '\t5\r\nhello\r\n', 'expected a hexadecimal chunk size, got byte 0x09', 0],
    ['an empty size line', '\r\n', 'expected a hexadecimal chunk size, got byte 0x0d', 0],
    ['a digit then junk', '5z\r\n', 'invalid character "z" in a chunk size', 1],
    ['junk after blanks', '5  x\r\n', 'invalid character "x" after a chunk size', 3],
    ['CR without LF in a size line', '5\rx', 'expected LF after CR in a chunk size line, got "x"', 2],
    ['no CRLF after data', '3\r\nabcX', `expected CRLF after a chunk's data, got "X"`, 6],
    ['CR without LF after data', '3\r\nabc\rX', 'expected LF after CR at the end of a chunk, got "X"', 7],
    [
      'junk where the next size line should start',
      '1\r\na\r\nq\r\n',
      'expected a hexadecimal chunk size, got "q"',
      6,
    ],
  ];
  malformed.forEach(([name, input, detail, at], index) => {
    test(`${name}: refused with a description, at the byte that shows it, in any split`, () => {
      for (const split of splits(bytes(input), 2000 + index)) {
        const fed = feedPieces(new ChunkFraming(NO_LIMIT), split.pieces);
        assert.deepEqual(fed.issue, { kind: 'malformed', detail }, split.name);
        assert.equal(fed.issueAt, at, split.name);
        assert.equal(fed.used, at, split.name);
      }
    });
  });
});

describe('chunk framing: max_chunk_bytes on the declared size', () => {
  test('a size over the limit is refused when its digits end, before any of its data', () => {
    for (const [input, declared, at] of [
      ['10\r\n', '16', 2],
      ['9;ext=1\r\n', '9', 1],
      ['0010 \r\n', '16', 4],
      ['9\n', '9', 1],
    ] as const) {
      const framing = new ChunkFraming(8);
      const result = framing.feed(bytes(input));
      assert.deepEqual(result, { used: at, issue: { kind: 'oversize', declared } }, input);
      assert.equal(framing.dataBytes, 0, input);
    }
  });

  test('a size over the limit after a valid chunk, its size line split across reads', () => {
    const framing = new ChunkFraming(8);
    assert.deepEqual(framing.feed(bytes('4\r\nabcd\r\n1')), { used: 10 });
    assert.deepEqual(framing.feed(bytes('0')), { used: 1 }, 'the size is not known yet');
    assert.deepEqual(framing.feed(bytes('\r\n')), {
      used: 0,
      issue: { kind: 'oversize', declared: '16' },
    });
    assert.equal(framing.dataBytes, 4);
  });

  test('2^64-1 is refused once past 2^53, without waiting for its last digit', () => {
    const framing = new ChunkFraming(1 << 20);
    // 14 hex digits make 2^56-1: the 14th (offset 13) shows the size is over any limit.
    assert.deepEqual(framing.feed(bytes('ffffffffffffffff\r\n')), {
      used: 13,
      issue: { kind: 'oversize', declared: '0xffffffffffffff... (over 2^53)' },
    });
  });

  test('a long size under 2^53 is shown in decimal', () => {
    const framing = new ChunkFraming(8);
    assert.deepEqual(framing.feed(bytes('1fffffffffffff\r\n')), {
      used: 14,
      issue: { kind: 'oversize', declared: String(2 ** 53 - 1) },
    });
  });
});

describe('chunk framing: where the body starts in the read that ended the headers', () => {
  const line = 'POST /live HTTP/1.1\r\n';
  const head = `${line}Host: voxd\r\nTransfer-Encoding: chunked\r\n\r\n`;

  test('just after this request head', () => {
    assert.equal(bodyStart(bytes(`${head}5\r\nhello\r\n0\r\n\r\n`), line), head.length);
    assert.equal(bodyStart(bytes(head), line), head.length, 'no body bytes yet');
  });

  test('after a pipelined request before it, whose empty line comes first', () => {
    const before = 'GET /x HTTP/1.1\r\nHost: voxd\r\n\r\n';
    assert.equal(bodyStart(bytes(`${before}${head}0\r\n\r\n`), line), before.length + head.length);
  });

  test('not at an empty line inside the body', () => {
    const body = '4\r\n\r\n\r\n\r\n0\r\n\r\n';
    assert.equal(bodyStart(bytes(`${head}${body}`), line), head.length);
  });

  test('without the request line in this read: the first empty line, even straddling the last read', () => {
    assert.equal(bodyStart(bytes('Host: voxd\r\n\r\n0\r\n\r\n'), line), 14);
    assert.equal(bodyStart(bytes('\r\n5\r\nhello'), line), 2);
    assert.equal(bodyStart(bytes('\n5\r\nhello'), line), 1);
  });

  test('no end of the head in this read', () => {
    assert.equal(bodyStart(bytes(`${line}Host: voxd\r\n`), line), undefined);
  });
});
