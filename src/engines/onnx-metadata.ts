/**
 * The metadata of an ONNX file (ModelProto.metadata_props), read without loading the model. The
 * graph and its weights (hundreds of MB) are skipped by their length prefix, so a load reads a few
 * KB, asynchronously. Families read it to learn what sherpa-onnx does not report (speaker names)
 * and to check what sherpa would otherwise end the whole process over (a missing key).
 */
import { open } from 'node:fs/promises';

const METADATA_PROPS = 14; // ModelProto field number
const MAX_ENTRY_BYTES = 16 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** Sequential reads of a file by position, a chunk at a time. */
class FileCursor {
  #buffer = Buffer.alloc(0);
  #start = 0; // file position of #buffer[0]
  position = 0;

  constructor(
    private readonly file: import('node:fs/promises').FileHandle,
    readonly size: number,
  ) {}

  async bytes(length: number): Promise<Buffer> {
    if (this.position + length > this.size) throw new Error('truncated protobuf');
    const offset = this.position - this.#start;
    if (offset < 0 || offset + length > this.#buffer.length) {
      this.#buffer = Buffer.alloc(Math.max(length, CHUNK));
      const { bytesRead } = await this.file.read(this.#buffer, 0, this.#buffer.length, this.position);
      this.#buffer = this.#buffer.subarray(0, bytesRead);
      this.#start = this.position;
    }
    const at = this.position - this.#start;
    this.position += length;
    return this.#buffer.subarray(at, at + length);
  }

  async varint(): Promise<number> {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      const byte = (await this.bytes(1))[0]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    throw new Error('bad protobuf varint');
  }

  /** Skips one field's value of the given wire type. */
  async skip(wireType: number): Promise<void> {
    if (wireType === 0) await this.varint();
    else if (wireType === 1) this.position += 8;
    else if (wireType === 2) {
      const length = await this.varint(); // read first: `position += await ...` would use the old position
      this.position += length;
    } else if (wireType === 5) this.position += 4;
    else throw new Error(`unsupported protobuf wire type ${wireType}`);
    if (this.position > this.size) throw new Error('truncated protobuf');
  }
}

/** Parses one StringStringEntryProto: key (field 1) and value (field 2). */
function entry(bytes: Buffer): [string, string] {
  let key = '';
  let value = '';
  let i = 0;
  const varint = () => {
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      if (i >= bytes.length || shift > 49) throw new Error('bad metadata entry');
      const byte = bytes[i++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return result;
    }
  };
  while (i < bytes.length) {
    const tag = varint();
    if ((tag & 7) !== 2) throw new Error('bad metadata entry');
    const length = varint();
    if (i + length > bytes.length) throw new Error('bad metadata entry');
    const text = bytes.toString('utf8', i, i + length);
    i += length;
    if (tag >>> 3 === 1) key = text;
    else if (tag >>> 3 === 2) value = text;
  }
  return [key, value];
}

/** The key/value metadata of the ONNX model at `path`; throws when the file is not ONNX protobuf. */
export async function readOnnxMetadata(path: string): Promise<Map<string, string>> {
  const file = await open(path, 'r');
  try {
    const cursor = new FileCursor(file, (await file.stat()).size);
    const metadata = new Map<string, string>();
    while (cursor.position < cursor.size) {
      const tag = await cursor.varint();
      const field = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (field === 0) throw new Error('bad protobuf field 0');
      if (field === METADATA_PROPS && wireType === 2) {
        const length = await cursor.varint();
        if (length > MAX_ENTRY_BYTES) throw new Error('metadata entry too large');
        const [key, value] = entry(await cursor.bytes(length));
        metadata.set(key, value);
      } else {
        await cursor.skip(wireType);
      }
    }
    return metadata;
  } finally {
    await file.close();
  }
}
