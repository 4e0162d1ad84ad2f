/** multipart/form-data bodies, buffered in memory within max_request_body_bytes. */
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { invalidRequest, VoxdError } from '../errors.js';
import { checkDeclaredLength } from './body.js';

export interface UploadedFile {
  field: string;
  filename: string;
  data: Buffer;
}

export interface MultipartBody {
  fields: Map<string, string>;
  files: UploadedFile[];
}

export function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\/form-data/i.test(req.headers['content-type'] ?? '');
}

export async function readMultipart(req: IncomingMessage, limit: number): Promise<MultipartBody> {
  checkDeclaredLength(req, limit);
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: { fieldSize: limit, fileSize: limit } });
  } catch (err) {
    throw invalidRequest(`malformed multipart request: ${(err as Error).message}`);
  }
  const fields = new Map<string, string>();
  const files: UploadedFile[] = [];
  let size = 0;
  return new Promise<MultipartBody>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      req.unpipe(parser);
      req.resume();
      reject(err);
    };
    const count = (bytes: number) => {
      size += bytes;
      if (size > limit)
        fail(new VoxdError('E_BODY_TOO_LARGE', `request body exceeds max_request_body_bytes=${limit}`));
    };
    parser.on('field', (name, value) => {
      count(Buffer.byteLength(value));
      fields.set(name, value);
    });
    parser.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => {
        count(chunk.length);
        if (!failed) chunks.push(chunk);
      });
      stream.on('end', () =>
        files.push({ field, filename: info.filename ?? '', data: Buffer.concat(chunks) }),
      );
    });
    parser.on('error', (err: Error) => fail(invalidRequest(`malformed multipart request: ${err.message}`)));
    parser.on('close', () => {
      if (!failed) resolve({ fields, files });
    });
    req.on('error', fail);
    req.pipe(parser);
  });
}
