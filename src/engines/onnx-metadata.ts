/**
 * The `metadata_props` of an ONNX file, read without loading the model: sherpa-onnx ends the
 * process (exit(), not an exception) on some metadata it cannot use, so a family checks the
 * metadata first. Only the top-level protobuf fields are walked; the graph (the weights, often
 * hundreds of MB) is skipped by its length, so this reads a few hundred bytes.
 */
import { open } from 'node:fs/promises';

const METADATA_PROPS = 14;
const KEY = 1;
const VALUE = 2;
// A varint takes at most 10 bytes; a key and a length, at most 20.
const HEADER = 20;

interface Varint {
  value: number;
  next: number;
}

// Number arithmetic, not bit operations, so lengths above 2^31 (large models) stay exact.
function varint(bytes: Uint8Array, at: number): Varint {
  let value = 0;
  let scale = 1;
  for (let i = at; i < bytes.length && i < at + 10; i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if (byte < 0x80) return { value, next: i + 1 };
  }
  throw new Error('truncated varint');
}

/** Where the field starting at `at` ends, or the range of its bytes when it is length-delimited. */
function field(bytes: Uint8Array, at: number): { number: number; start: number; end: number } {
  const key = varint(bytes, at);
  const number = Math.floor(key.value / 8);
  switch (key.value % 8) {
    case 0:
      return { number, start: key.next, end: varint(bytes, key.next).next };
    case 1:
      return { number, start: key.next, end: key.next + 8 };
    case 2: {
      const length = varint(bytes, key.next);
      return { number, start: length.next, end: length.next + length.value };
    }
    case 5:
      return { number, start: key.next, end: key.next + 4 };
    default:
      throw new Error(`unsupported protobuf wire type ${key.value % 8}`);
  }
}

/** One StringStringEntryProto: {1: key, 2: value}. */
function entry(bytes: Uint8Array): [string, string] {
  const text = new TextDecoder();
  let key = '';
  let value = '';
  for (let at = 0; at < bytes.length; ) {
    const f = field(bytes, at);
    if (f.number === KEY) key = text.decode(bytes.subarray(f.start, f.end));
    if (f.number === VALUE) value = text.decode(bytes.subarray(f.start, f.end));
    at = f.end;
  }
  return [key, value];
}

/** The metadata of an ONNX model file; throws when the file is not a readable ONNX protobuf. */
export async function readOnnxMetadata(path: string): Promise<Map<string, string>> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const metadata = new Map<string, string>();
    const header = new Uint8Array(HEADER);
    for (let at = 0; at < size; ) {
      const { bytesRead } = await file.read(header, 0, HEADER, at);
      const f = field(header.subarray(0, bytesRead), 0);
      const start = at + f.start;
      const end = at + f.end;
      if (end > size) throw new Error('a field runs past the end of the file');
      if (f.number === METADATA_PROPS) {
        const body = new Uint8Array(end - start);
        await file.read(body, 0, body.length, start);
        const [key, value] = entry(body);
        metadata.set(key, value);
      }
      at = end;
    }
    return metadata;
  } finally {
    await file.close();
  }
}
