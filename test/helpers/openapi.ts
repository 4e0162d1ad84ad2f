/**
 * Checks real exchanges against voxd's OpenAPI document (src/http/openapi.ts): the status must be
 * one the operation documents, the Content-Type one of that response's media types, and a JSON body
 * must match its schema (ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1). A request the server
 * accepted must match the document's request body: JSON against its schema, multipart fields
 * against the form's.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ROUTES } from '../../src/http/index.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import { formObject as readForm } from '../../src/http/request/form-text.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON
type Json = any;

export const OPENAPI: Json = buildOpenApi(ROUTES);
const DOC_ID = 'https://voxd.invalid/openapi.json';

const ajv = new Ajv2020({ strict: false, allErrors: true });
// The whole document is one schema resource, so each media type's schema is compiled by its JSON
// pointer and its `#/components/schemas/...` references resolve inside the document.
ajv.addSchema({ ...OPENAPI, $id: DOC_ID });
const validators = new Map<string, ValidateFunction>();

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

function validatorAt(path: string): ValidateFunction {
  let validate = validators.get(path);
  if (!validate) {
    validate = ajv.compile({ $ref: `${DOC_ID}#/${path}` });
    validators.set(path, validate);
  }
  return validate;
}

/** A response object and the JSON pointer of it, following a `$ref` to components/responses. */
function resolveResponse(response: Json, at: string): { response: Json; at: string } {
  const target = response?.$ref as string | undefined;
  if (!target) return { response, at };
  const name = target.replace('#/components/responses/', '');
  return { response: OPENAPI.components.responses[name], at: pointer('components', 'responses', name) };
}

/**
 * Compiles the schema of every documented JSON and text response now (about a second), so that no
 * checked request pays for it: some tests time their requests.
 */
export function compileAllResponseSchemas(): number {
  const seen = new Set<string>();
  const visit = (response: Json, at: string) => {
    const found = resolveResponse(response, at);
    for (const media of Object.keys(found.response.content ?? {}))
      if (media === 'application/json' || media.startsWith('text/'))
        seen.add(`${found.at}/${pointer('content', media, 'schema')}`);
  };
  for (const [path, item] of Object.entries(OPENAPI.paths) as [string, Json][])
    for (const [method, op] of Object.entries(item) as [string, Json][])
      for (const [status, response] of Object.entries(op.responses))
        visit(response, pointer('paths', path, method, 'responses', status));
  for (const name of Object.keys(OPENAPI.components.responses))
    visit({ $ref: `#/components/responses/${name}` }, '');
  // One call each too: the first call of a validator is slow as well.
  for (const at of seen) validatorAt(at)(null);
  return seen.size;
}

/** The documented path template (`/v1/models/{id}`) that `path` fills, if any; exact paths win. */
function templateOf(path: string): string | undefined {
  return Object.keys(OPENAPI.paths).find(
    (t) => t.includes('{') && new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
  );
}

/**
 * Throws when the response is not what the document says `method path` answers with `status`.
 * `path` may carry a query string; `body` is the raw body (parsed here when it is JSON).
 */
export function assertMatchesOpenApi(
  method: string,
  path: string,
  status: number,
  headers: Headers | Record<string, string>,
  body: Buffer | string,
): void {
  const bare = path.split('?')[0]!;
  const m = method.toLowerCase();
  const what = `${method} ${bare} -> ${status}`;
  const template = OPENAPI.paths[bare] ? bare : templateOf(bare);
  const item = template === undefined ? undefined : OPENAPI.paths[template];
  let found: { response: Json; at: string };
  // OPTIONS is the CORS preflight on any path (a 204 with no body, see the document's description).
  if (m === 'options' && status === 204 && body.length === 0) return;
  if (!item?.[m]) {
    // With API keys, a request without a valid key is a 401 before routing (the document says so).
    const expected = item ? 405 : 404;
    if (status !== expected && status !== 401)
      throw new Error(
        `openapi: ${what}: ${item ? `${method} is not an operation of the path` : 'the path is not in the document'}, so only ${expected} (or 401 without a key) is expected`,
      );
    const name = status === 401 ? 'Unauthorized' : item ? 'MethodNotAllowed' : 'NotFound';
    found = resolveResponse({ $ref: `#/components/responses/${name}` }, '');
  } else {
    const response = item[m].responses[String(status)];
    if (!response)
      throw new Error(
        `openapi: ${what}: status not documented (documented: ${Object.keys(item[m].responses).join(', ')})`,
      );
    found = resolveResponse(response, pointer('paths', template!, m, 'responses', String(status)));
  }
  const get = (name: string) =>
    headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()] ?? null);
  const contentType = (get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const content = found.response.content as Record<string, Json> | undefined;
  if (!content) {
    if (body.length > 0) throw new Error(`openapi: ${what}: a body where the document gives none`);
    return;
  }
  if (!(contentType in content))
    throw new Error(
      `openapi: ${what}: Content-Type ${contentType || '(none)'} not documented (documented: ${Object.keys(content).join(', ')})`,
    );
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let value: unknown;
  if (contentType === 'application/json') {
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`openapi: ${what}: the body is not JSON: ${text.slice(0, 200)}`);
    }
  } else if (contentType.startsWith('text/')) value = text;
  else return; // Binary audio: the schema says only that it is bytes.
  const validate = validatorAt(`${found.at}/${pointer('content', contentType, 'schema')}`);
  if (!validate(value))
    throw new Error(
      `openapi: ${what}: the body does not match the schema: ${describe(validate.errors)}; body: ${text.slice(0, 300)}`,
    );
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');
}

/**
 * A multipart body as the form schema sees it: each field read from its text as the server reads
 * it (src/http/request/form-text.ts), a file part as its name, listed fields as arrays.
 */
function formValue(form: FormData, schema: Json): Record<string, unknown> {
  const lists = new Map<string, string[]>();
  const files: { field: string; filename: string }[] = [];
  for (const [key, value] of form.entries()) {
    if (typeof value !== 'string') files.push({ field: key, filename: (value as File).name || 'blob' });
    else lists.set(key, [...(lists.get(key) ?? []), value]);
  }
  return { ...readForm({ lists, files }, schema).value };
}

const resolveSchema = (schema: Json): Json =>
  schema?.$ref ? OPENAPI.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;

/**
 * Throws when a request the server answered with a 2xx is not what the document says `method path`
 * takes: a JSON body must match the documented JSON schema, a multipart body the form's; a body of
 * a media type the operation does not document is an error too.
 */
export function assertRequestMatchesOpenApi(
  method: string,
  path: string,
  sent: { body?: string | Buffer | FormData; headers?: Record<string, string> },
): void {
  const bare = path.split('?')[0]!;
  const template = OPENAPI.paths[bare] ? bare : templateOf(bare);
  const m = method.toLowerCase();
  const op = template === undefined ? undefined : OPENAPI.paths[template]?.[m];
  const content = op?.requestBody?.content as Record<string, Json> | undefined;
  if (!content || sent.body === undefined) return;
  const what = `${method} ${bare} request`;
  const type = sent.body instanceof FormData ? 'multipart/form-data' : contentTypeOf(sent.headers);
  if (!(type in content))
    throw new Error(
      `openapi: ${what}: Content-Type ${type} not documented (documented: ${Object.keys(content).join(', ')})`,
    );
  // Raw audio bodies (the live routes) are bytes to the schema; a multipart body built by hand (the
  // tests of cut and malformed bodies) is checked by the route's own tests, not re-parsed here.
  const form = sent.body instanceof FormData;
  if (type !== 'application/json' && !form) return;
  const at = `${pointer('paths', template!, m, 'requestBody', 'content', type, 'schema')}`;
  const value =
    sent.body instanceof FormData
      ? formValue(sent.body, resolveSchema(content[type].schema))
      : JSON.parse(sent.body.toString());
  const validate = validatorAt(at);
  if (!validate(value))
    throw new Error(
      `openapi: ${what}: the body does not match the schema: ${describe(validate.errors)}; body: ${JSON.stringify(value).slice(0, 300)}`,
    );
}

function contentTypeOf(headers: Record<string, string> | undefined): string {
  const entry = Object.entries(headers ?? {}).find(([k]) => k.toLowerCase() === 'content-type');
  return (entry?.[1] ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
}
