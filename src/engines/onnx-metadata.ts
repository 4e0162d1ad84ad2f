/**
 * The custom metadata of an ONNX file (`metadata_props`), read without loading the model. sherpa
 * ends the whole process (`_Exit`) when a metadata key it needs is missing, so families check the
 * keys first and answer a 400 instead. Only the top-level protobuf fields are walked: the graph
 * (hundreds of MB in a real encoder) is skipped by its length, never read.
 */
import { open } from 'node:fs/promises';

const GRAPH = 7; // ModelProto.graph
const METADATA_PROPS = 14; // ModelProto.metadata_props: repeated StringStringEntryProto
const HEAD = 24; // a tag and a length: two varints of at most 10 bytes each

const notOnnx = (pos: number) => new Error(`not an ONNX model (no protobuf field at byte ${pos})`);

/** Decodes a protobuf varint at `at`; returns [value, next offset], or undefined past `end`. */
function varint(buf: Buffer, at: number, end: number): [number, number] | undefined {
  let value = 0;
  let scale = 1;
  for (let i = at; i < end && i < at + 10; i++) {
    const byte = buf[i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, i + 1];
    scale *= 128;
  }
  return undefined;
}

/** key -> value of one StringStringEntryProto. */
function entry(buf: Buffer): [string, string] {
  let key = '';
  let value = '';
  let at = 0;
  while (at < buf.length) {
    const tag = varint(buf, at, buf.length);
    const len = tag && varint(buf, tag[1], buf.length);
    if (!tag || !len || (tag[0] & 7) !== 2) throw new Error('malformed metadata entry');
    const text = buf.toString('utf8', len[1], len[1] + len[0]);
    if (tag[0] >>> 3 === 1) key = text;
    else if (tag[0] >>> 3 === 2) value = text;
    at = len[1] + len[0];
  }
  return [key, value];
}

/** The metadata of the ONNX file at `path`; throws (naming the byte) when it is not a readable ONNX model. */
export async function onnxMetadata(path: string): Promise<Map<string, string>> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const head = Buffer.alloc(HEAD);
    const found = new Map<string, string>();
    let pos = 0;
    let graph = false;
    while (pos < size) {
      const { bytesRead } = await file.read(head, 0, HEAD, pos);
      const tag = varint(head, 0, bytesRead);
      if (!tag || tag[0] >>> 3 === 0) throw notOnnx(pos);
      const [key, at] = tag;
      const wire = key & 7;
      if (wire === 0) {
        const value = varint(head, at, bytesRead);
        if (!value) throw notOnnx(pos);
        pos += value[1];
      } else if (wire === 1) pos += at + 8;
      else if (wire === 5) pos += at + 4;
      else if (wire === 2) {
        const len = varint(head, at, bytesRead);
        if (!len || pos + len[1] + len[0] > size) throw notOnnx(pos);
        if (key >>> 3 === GRAPH) graph = true;
        if (key >>> 3 === METADATA_PROPS) {
          const body = Buffer.alloc(len[0]);
          await file.read(body, 0, len[0], pos + len[1]);
          const [k, v] = entry(body);
          found.set(k, v);
        }
        pos += len[1] + len[0];
      } else throw notOnnx(pos);
    }
    if (!graph) throw new Error('not an ONNX model (it has no graph)');
    return found;
  } finally {
    await file.close();
  }
}
