/**
 * Request bodies checked against their route's schema, the same TypeBox schema the OpenAPI
 * document publishes (src/http/openapi.ts), compiled once by ajv (JSON Schema 2020-12, the dialect
 * of OpenAPI 3.1). A body that does not match is a 400 naming the failing field by its path
 * (`voice`, `request.seed`, `requests[0].input`) and showing its value, in the words the
 * hand-written checks use (`seed: "x" is invalid; expected an integer`). What a schema cannot say
 * stays in the handlers: which model serves the task, text length against the model, ranges that
 * depend on the engine.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { invalidField, showValue } from '../../errors.js';
import { type Reply, type Route, type RouteContext, requireManagement } from '../transport/route.js';
import { readJsonObject } from './body.js';
import { type FormParts, formObject, readTextFields } from './form-text.js';

/** The words of a field's expectation in an error message (`expected <this>`). */
const EXPECTED = 'x-expected';

// unicode false: string lengths are counted in UTF-16 units (.length) rather than by a walk over
// every character for surrogate pairs, which for a 5 s base64 upload took 0.4 ms of the main
// thread to check that it is not empty (minLength 1, the only length bound here; the same answer).
// Ajv 8 still honours the option but warns, at every start, that it is deprecated: that one
// warning is dropped, any other is printed.
const UNICODE_WARNING = 'DEPRECATED: option unicode.';
const ajv = new Ajv2020({
  strict: false,
  allErrors: false,
  unicode: false,
  logger: {
    log: console.log,
    warn: (...args: unknown[]) => {
      if (!String(args[0]).startsWith(UNICODE_WARNING)) console.warn(...args);
    },
    error: console.error,
  },
});
ajv.addKeyword(EXPECTED);

/** A number, or a string that spells one: options reach engines as text (audio.cpp's option maps). */
export const NumberLike = (description?: string) =>
  Type.Union(
    [Type.Number(), Type.String({ pattern: '^\\s*[-+]?(\\d+\\.?\\d*|\\.\\d+)([eE][-+]?\\d+)?\\s*$' })],
    {
      [EXPECTED]: 'a number',
      ...(description ? { description } : {}),
    },
  );

/** An integer, or a string that spells one. */
export const IntegerLike = (description?: string) =>
  Type.Union([Type.Integer(), Type.String({ pattern: '^\\s*[-+]?\\d+\\s*$' })], {
    [EXPECTED]: 'an integer',
    ...(description ? { description } : {}),
  });

/** true/false, or the words a form field spells them with (true, True, 1, false, False, 0). */
export const BoolLike = (description?: string) =>
  Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'True', '1', 'false', 'False', '0'] })], {
    [EXPECTED]: 'true or false',
    ...(description ? { description } : {}),
  });

/** An option value copied into the engine's options as text: a string, a number or a boolean. */
export const Scalar = (description?: string) =>
  Type.Union([Type.String(), Type.Number(), Type.Boolean()], {
    [EXPECTED]: 'a string, number or boolean',
    ...(description ? { description } : {}),
  });

/** busy_timeout_ms: an integer >= 0 in JSON, or the digits a form field or query sends. */
export const BusyTimeout = () =>
  Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^\\d+$' })], {
    [EXPECTED]: 'an integer >= 0 (0 waits without limit)',
    description: 'An integer >= 0, or a string of digits: how long to wait for a busy model (ms).',
  });

/** One of a closed set of strings, typed as that set. */
export const OneOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

/** A non-empty string. */
export const Text = (description?: string) =>
  Type.String({ minLength: 1, [EXPECTED]: 'a non-empty string', ...(description ? { description } : {}) });

/** An object of option values (flattened to text for the engine: config/options.ts). */
export const OptionObject = (description?: string) =>
  Type.Object(
    {},
    {
      additionalProperties: true,
      [EXPECTED]: 'an object of option values',
      ...(description ? { description } : {}),
    },
  );

/**
 * An optional field that may also be null (absent, to voxd), keeping the words of what it expects.
 */
export function Optional<T extends TSchema>(schema: T) {
  const words = typeof schema[EXPECTED] === 'string' ? schema[EXPECTED] : typeWords(schema);
  return Type.Optional(
    Type.Union([schema, Type.Null()], {
      [EXPECTED]: words,
      ...(schema['description'] ? { description: schema['description'] as string } : {}),
    }),
  );
}

/** `/requests/0/input` as a client writes it: `requests[0].input`. */
function pathOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** A schema's enum or type, in words. */
function typeWords(schema: TSchema): string {
  if (Array.isArray(schema['enum'])) return `one of: ${(schema['enum'] as unknown[]).join(', ')}`;
  const type = schema['type'];
  const types = (Array.isArray(type) ? type : [type]).filter((t): t is string => typeof t === 'string');
  return types.length ? types.map((t) => TYPE_WORDS[t] ?? t).join(' or ') : 'a valid value';
}

/** The schema at an ajv schema path (`#/properties/request/anyOf/0`) inside `root`. */
function schemaAt(root: TSchema, schemaPath: string): TSchema | undefined {
  let schema: unknown = root;
  // ajv writes a schema path as a URI fragment: `include[]` is `include%5B%5D`.
  for (const part of schemaPath.split('/').slice(1))
    schema = (schema as Record<string, unknown> | undefined)?.[
      decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~')
    ];
  return schema as TSchema | undefined;
}

/** The schema an error's keyword belongs to: its schema path without the keyword. */
const ownerOf = (root: TSchema, error: ErrorObject) =>
  schemaAt(root, error.schemaPath.slice(0, error.schemaPath.lastIndexOf('/')));

const wordsOf = (schema: TSchema | undefined) =>
  !schema ? 'a valid value' : typeof schema[EXPECTED] === 'string' ? schema[EXPECTED] : typeWords(schema);

/** The value at `pointer` in `body`. */
function valueAt(body: unknown, pointer: string): unknown {
  let value = body;
  // Only into objects and arrays: inside a form's JSON text (a string) nothing is found, not `.length`.
  for (const part of pointer.split('/').slice(1))
    value =
      typeof value === 'object' && value !== null
        ? (value as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')]
        : undefined;
  return value;
}

const isUnion = (e: ErrorObject) => e.keyword === 'anyOf' || e.keyword === 'oneOf';

/**
 * The error to report. Validation stops at the first failing keyword, which ajv lists last, after
 * the errors of its branches when it is a union. A union of one kind of value and null (an
 * optional field) is looked into, so that `request.seed` is named rather than `request`; a union
 * of several kinds (a voice name or `{"id"}`) is reported as a whole: a voice that is neither is a
 * bad `voice`, not a bad `voice.id`.
 */
function reported(root: TSchema, body: unknown, errors: readonly ErrorObject[]): ErrorObject {
  const last = errors[errors.length - 1]!;
  const value = valueAt(body, last.instancePath);
  if (!isUnion(last) || value === null) return last;
  const branches = (schemaAt(root, last.schemaPath) ?? []) as TSchema[];
  const kinds = branches.flatMap((branch, i) => (branch['type'] === 'null' ? [] : [i]));
  const chosen = kinds.length === 1 ? kinds[0] : taggedBranch(branches, value);
  if (chosen === undefined) return last;
  const inner = errors.filter((e) => e.schemaPath.startsWith(`${last.schemaPath}/${chosen}/`));
  return inner.length ? reported(root, body, inner) : last;
}

/**
 * The branch of a union that an object names by its `type` (`{"type":"server_vad",...}`): its
 * fields are what is wrong, not the choice of branch.
 */
function taggedBranch(branches: readonly TSchema[], value: unknown): number | undefined {
  const tag = (value as Record<string, unknown> | undefined)?.['type'];
  if (typeof value !== 'object' || Array.isArray(value) || typeof tag !== 'string') return undefined;
  const index = branches.findIndex((branch) => {
    const allowed = (branch['properties'] as Record<string, TSchema> | undefined)?.['type']?.['enum'];
    return Array.isArray(allowed) && allowed.includes(tag);
  });
  return index < 0 ? undefined : index;
}

/** What the checker saw (`read`) and what the client wrote (`sent`: text not yet read as its type). */
interface Checked {
  read: unknown;
  sent: unknown;
  /** A form: a list field is named as the client names it (`include[]`), not by its part's index. */
  form?: boolean;
}

/**
 * The 400 of the first mismatch, naming the field by its path and showing its value as the client
 * wrote it (inside JSON text, as it was read).
 */
function mismatch(root: TSchema, { read, sent, form = false }: Checked, errors: readonly ErrorObject[]) {
  const error = reported(root, read, errors);
  const fieldPath = (pointer: string) => {
    const path = pathOf(pointer);
    return form ? path.replace(/\[\]\[\d+\]/, '[]') : path;
  };
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    const path = fieldPath(`${error.instancePath}/${missing}`);
    const properties = ownerOf(root, error)?.['properties'] as Record<string, TSchema> | undefined;
    return invalidField(path, `'${path}' is required: expected ${wordsOf(properties?.[missing])}`);
  }
  const path = fieldPath(error.instancePath);
  const schema = ownerOf(root, error);
  const value = valueAt(sent, error.instancePath) ?? valueAt(read, error.instancePath);
  return invalidField(
    path,
    `${path || 'request body'}: ${showValue(value)} is invalid; expected ${wordsOf(schema)}`,
  );
}

/** A checker of bodies against `schema`: it returns the body typed, or throws the 400. */
export function bodyChecker<T extends TSchema>(schema: T): (body: Record<string, unknown>) => Static<T> {
  const compile = compiler(schema);
  return (body) => {
    const valid = compile();
    if (!valid(body)) throw mismatch(schema, { read: body, sent: body }, valid.errors ?? []);
    return body as Static<T>;
  };
}

/**
 * A checker of a route's JSON body that also takes its fields as text, as the route's form sends
 * them (`"temperature": "0.5"`, `"options": "{...}"`): each is read as its schema's type first.
 */
export function textBodyChecker<T extends TSchema>(schema: T): (body: Record<string, unknown>) => Static<T> {
  const compile = compiler(schema);
  return (body) => {
    const read = readTextFields(body, schema);
    const valid = compile();
    if (!valid(read)) throw mismatch(schema, { read, sent: body }, valid.errors ?? []);
    return read as Static<T>;
  };
}

/**
 * A checker of multipart bodies against a route's form schema: each field is read from its text as
 * the schema's type (form-text.ts), a file part stands as its file name, and the fields come back
 * typed, or the 400 naming one and showing it as the client wrote it.
 */
export function formChecker<T extends TSchema>(schema: T): (parts: FormParts) => Static<T> {
  const compile = compiler(schema);
  return (parts) => {
    const { value, text } = formObject(parts, schema);
    const valid = compile();
    if (!valid(value)) throw mismatch(schema, { read: value, sent: text, form: true }, valid.errors ?? []);
    return value as Static<T>;
  };
}

/** The schema's validator, compiled on first use or by compileSchemas, whichever comes first. */
function compiler(schema: TSchema): () => ValidateFunction {
  let validate: ValidateFunction | undefined;
  const compile = () => {
    validate ??= ajv.compile(schema);
    return validate;
  };
  uncompiled.add(compile);
  return compile;
}

/**
 * The query as its schema sees it: the first value of each parameter, as text, except where the
 * schema declares an integer (digits only: "+16000" and "16000junk" stay text and are refused) or a
 * boolean (true, 1, false, 0), which are read from their text.
 */
function queryObject(text: Record<string, string>, schema: TSchema): Record<string, unknown> {
  const properties = (schema['properties'] ?? {}) as Record<string, TSchema>;
  const out: Record<string, unknown> = { ...text };
  for (const [name, value] of Object.entries(text)) {
    const type = properties[name]?.['type'];
    if (type === 'integer' && /^[0-9]{1,15}$/.test(value)) out[name] = Number(value);
    else if (type === 'boolean' && FLAGS[value] !== undefined) out[name] = FLAGS[value];
  }
  return out;
}

const FLAGS: Record<string, boolean> = { true: true, 1: true, false: false, 0: false };

/**
 * A checker of query strings against `schema`: the parameters typed, or the 400 naming one and
 * showing its value as the client wrote it (`sample_rate: "999"`, not 999).
 */
export function queryChecker<T extends TSchema>(schema: T): (params: URLSearchParams) => Static<T> {
  const compile = compiler(schema);
  return (params) => {
    // No prototype: a parameter named __proto__ or constructor is a parameter like any other.
    const text: Record<string, string> = Object.create(null);
    for (const [name, value] of params) if (!Object.hasOwn(text, name)) text[name] = value;
    const query = queryObject(text, schema);
    const valid = compile();
    if (!valid(query)) throw mismatch(schema, { read: query, sent: text }, valid.errors ?? []);
    return query as Static<T>;
  };
}

/**
 * The checkers not compiled yet. Compiling every route's schema takes about a second of CPU, which
 * a one-shot CLI command that never serves should not pay at import: the server compiles them all
 * when it is created (compileSchemas), so no request pays for it either.
 */
const uncompiled = new Set<() => unknown>();

export function compileSchemas(): void {
  for (const compile of uncompiled) compile();
  uncompiled.clear();
}

/**
 * A route whose JSON body is `body`: the body is read, checked and handed to the handler typed, and
 * the document publishes the same schema (src/http/openapi.ts).
 */
export function jsonRoute<S extends TSchema, Q extends TSchema = TSchema>(
  route: Omit<Route, 'handler' | 'body' | 'query'> & {
    body: S;
    query?: Q;
    /** What is refused before the body is read (a disabled feature is a 403 whatever the body). */
    guard?: (ctx: RouteContext) => void;
    handler: (ctx: RouteContext, body: Static<S>, query: Static<Q>) => Promise<Reply>;
  },
): Route {
  const check = bodyChecker(route.body);
  const { handler, guard, ...rest } = route;
  return queryRoute({
    ...rest,
    query: route.query ?? NO_QUERY,
    ...(guard ? { guard } : {}),
    handler: async (ctx, query) => handler(ctx, check(await readJsonObject(ctx)), query as Static<Q>),
  });
}

/** The query of a route that reads none: anything goes (`api_key`, a cache-buster). */
const NO_QUERY = Type.Object({}, { additionalProperties: true });

/**
 * A route whose query parameters are `query`: they are checked before the handler runs (before
 * the body is touched) and handed to it typed, and the document publishes the same schema as the
 * operation's query parameters. Parameters the schema does not name are let through (`api_key`).
 */
export function queryRoute<Q extends TSchema>(
  route: Omit<Route, 'handler' | 'query'> & {
    query: Q;
    /** What is refused before anything is read (a disabled feature is a 403 whatever was sent). */
    guard?: (ctx: RouteContext) => void;
    handler: (ctx: RouteContext, query: Static<Q>) => Promise<Reply>;
  },
): Route {
  const check = queryChecker(route.query);
  const { handler, guard, ...rest } = route;
  const declared = Object.keys(route.query['properties'] ?? {}).length > 0;
  return {
    ...rest,
    ...(declared ? { query: route.query } : {}),
    handler: async (ctx) => {
      guard?.(ctx);
      return handler(ctx, check(queryParams(ctx)));
    },
  };
}

/** The query's parameters, without building the URL when the request target has no query. */
function queryParams(ctx: RouteContext): URLSearchParams {
  const target = ctx.req?.url;
  return target !== undefined && !target.includes('?') ? EMPTY_QUERY : ctx.url.searchParams;
}

const EMPTY_QUERY = new URLSearchParams();

/**
 * A management POST with a JSON body: without ui_management it is refused with `disabled` (a 403),
 * whatever its body.
 */
export function managedRoute<S extends TSchema>(
  path: string,
  disabled: string | undefined,
  body: S,
  response: TSchema,
  handler: (ctx: RouteContext, body: Static<S>) => Promise<Reply>,
): Route {
  return jsonRoute({
    method: 'POST',
    path,
    scope: 'admin',
    body,
    response,
    guard: (ctx) => requireManagement(ctx, disabled),
    handler,
  });
}
