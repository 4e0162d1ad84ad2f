/**
 * The metadata and graph input/output names of an `.onnx` file, read without loading the model.
 * sherpa-onnx ends the whole process (exit, or a crash) on a model it cannot use, so families check
 * what it will ask for first. Only the protobuf framing is walked: weights and nodes are skipped by
 * length, so a 100 MB model costs a few small reads.
 */
import { open } from 'node:fs/promises';

export interface OnnxInfo {
  /** metadata_props, e.g. sample_rate, model_type. */
  metadata: Record<string, string>;
  inputs: string[];
  outputs: string[];
}

const CHUNK = 64 * 1024;

// Field numbers of onnx.proto: ModelProto.graph / metadata_props, GraphProto.input / output,
// ValueInfoProto.name, StringStringEntryProto.key / value.
const MODEL_GRAPH = 7;
const MODEL_METADATA = 14;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const NAME = 1;
const KEY = 1;
const VALUE = 2;

class NotOnnx extends Error {}

/** Positional reads through one cached chunk: the framing walk is mostly sequential. */
class Window {
  #buf = Buffer.alloc(0);
  #start = 0;
  constructor(
    private readonly read: (buf: Buffer, pos: number) => Promise<number>,
    readonly size: number,
  ) {}

  async bytes(pos: number, len: number): Promise<Buffer> {
    if (pos < 0 || len < 0 || pos + len > this.size) throw new NotOnnx('truncated');
    if (pos < this.#start || pos + len > this.#start + this.#buf.length) {
      const buf = Buffer.alloc(Math.min(Math.max(len, CHUNK), this.size - pos));
      const got = await this.read(buf, pos);
      if (got < len) throw new NotOnnx('truncated');
      this.#buf = buf.subarray(0, got);
      this.#start = pos;
    }
    return this.#buf.subarray(pos - this.#start, pos - this.#start + len);
  }
}

interface Field {
  number: number;
  /** Where the value starts and how long it is (length-delimited fields only). */
  at: number;
  length: number;
}

async function varint(w: Window, pos: number): Promise<{ value: number; next: number }> {
  const bytes = await w.bytes(pos, Math.min(10, w.size - pos));
  let value = 0;
  for (let i = 0; i < bytes.length; i++) {
    value += (bytes[i]! & 0x7f) * 2 ** (7 * i);
    if (bytes[i]! < 0x80) return { value, next: pos + i + 1 };
  }
  throw new NotOnnx('bad varint');
}

/** The length-delimited fields of the message in [start, end); other wire types are skipped. */
async function* fields(w: Window, start: number, end: number): AsyncGenerator<Field> {
  let pos = start;
  while (pos < end) {
    const tag = await varint(w, pos);
    const number = Math.floor(tag.value / 8);
    const wire = tag.value % 8;
    pos = tag.next;
    if (wire === 0) pos = (await varint(w, pos)).next;
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else if (wire === 2) {
      const len = await varint(w, pos);
      if (len.next + len.value > end) throw new NotOnnx('field past the end');
      yield { number, at: len.next, length: len.value };
      pos = len.next + len.value;
    } else throw new NotOnnx(`wire type ${wire}`);
    if (number === 0) throw new NotOnnx('field 0');
  }
}

async function text(w: Window, f: Field): Promise<string> {
  return (await w.bytes(f.at, f.length)).toString('utf8');
}

/** The string fields `wanted` of a small message. */
async function strings(w: Window, f: Field, wanted: number[]): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for await (const sub of fields(w, f.at, f.at + f.length))
    if (wanted.includes(sub.number)) out.set(sub.number, await text(w, sub));
  return out;
}

/** Reads `path`; throws an Error saying why when it is missing or not an ONNX model. */
export async function readOnnxInfo(path: string): Promise<OnnxInfo> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const w = new Window(async (buf, pos) => (await fh.read(buf, 0, buf.length, pos)).bytesRead, size);
    const info: OnnxInfo = { metadata: {}, inputs: [], outputs: [] };
    let graphs = 0;
    for await (const f of fields(w, 0, size)) {
      if (f.number === MODEL_METADATA) {
        const entry = await strings(w, f, [KEY, VALUE]);
        info.metadata[entry.get(KEY) ?? ''] = entry.get(VALUE) ?? '';
      } else if (f.number === MODEL_GRAPH) {
        graphs++;
        for await (const g of fields(w, f.at, f.at + f.length)) {
          if (g.number !== GRAPH_INPUT && g.number !== GRAPH_OUTPUT) continue;
          const name = (await strings(w, g, [NAME])).get(NAME) ?? '';
          (g.number === GRAPH_INPUT ? info.inputs : info.outputs).push(name);
        }
      }
    }
    if (graphs !== 1 || info.outputs.length === 0) throw new NotOnnx('no graph');
    return info;
  } catch (err) {
    if (err instanceof NotOnnx) throw new Error(`${path} is not an ONNX model (${err.message})`);
    throw err;
  } finally {
    await fh.close();
  }
}
