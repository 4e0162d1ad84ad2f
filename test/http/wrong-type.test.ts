/**
 * Every documented request field of every route refuses a value of the wrong type. The cases come
 * from the document the server serves (GET /openapi.json): for each property of each
 * `application/json` request body (the schema the route checks with), and for the fields of its
 * nested request objects (`request.seed`, `requests[0].seed`), a value the field's own schema
 * refuses is sent alongside valid required fields, and the answer must be a 400 whose `param` is
 * that field's path and whose message shows the value. The query parameters of every route are
 * tried the same way with text their schema refuses, and so are the fields of every
 * `multipart/form-data` body, whose text is read as the field's type first (as the server reads
 * it); an upload sent as a text field is no upload. No field is listed by hand: a new route or field
 * is tested as soon as the document has it.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { formObject } from '../../src/http/request/form-text.js';
import { suiteServer } from '../helpers/suite-server.js';
import { errorOf, fixtureModel, get, post, request } from '../helpers/voxd.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON
type Json = any;

/** The served document, fetched once by the first suite's before hook. */
let DOC: Json;
/** One speech model and the management routes, so that every route answers past its gates. */
const SERVER = { models: [fixtureModel('tts', { task: 'tts' })], ui_management: true };
const ajv = new Ajv2020({ strict: false });

/** Candidate wrong values, tried in order: the first the field's schema refuses is sent. */
const WRONG: unknown[] = [{ not: 'a string' }, 'not-a-number', 12.5, true, ['x'], -1, ''];

const resolve = (schema: Json): Json =>
  schema?.$ref ? DOC.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;

/** The object schema inside a field's schema (an optional object is a union with null), if any. */
function objectOf(schema: Json): Json | undefined {
  const own = resolve(schema);
  if (own?.type === 'object' && own.properties && Object.keys(own.properties).length) return own;
  const branches = (own?.anyOf ?? []).filter((b: Json) => b.type !== 'null');
  return branches.length === 1 ? objectOf(branches[0]) : undefined;
}

/** A value of the right type for a required field (model ids and paths are plain strings). */
function validValue(schema: Json): unknown {
  const own = resolve(schema);
  if (own.type === 'array') return [validValue(own.items)];
  if (own.type === 'object') return validBody(own);
  return 'x';
}

function validBody(schema: Json): Record<string, unknown> {
  return Object.fromEntries(
    (schema.required ?? []).map((name: string) => [name, validValue(schema.properties[name])]),
  );
}

interface Case {
  route: string;
  param: string;
  body: Record<string, unknown>;
  wrong: unknown;
}

/** The cases of one body schema; `wrap` places a nested request's fields in the whole body. */
function casesOf(
  route: string,
  schema: Json,
  at: string,
  wrap: (fields: Record<string, unknown>) => Record<string, unknown>,
): Case[] {
  const cases: Case[] = [];
  for (const [name, field] of Object.entries(schema.properties as Record<string, Json>)) {
    const accepts = ajv.compile(resolve(field));
    const wrong = WRONG.find((value) => !accepts(value));
    cases.push({ route, param: `${at}${name}`, body: wrap({ ...validBody(schema), [name]: wrong }), wrong });
    const nested = objectOf(field);
    if (nested && at === '')
      cases.push(
        ...casesOf(route, nested, `${name}.`, (fields) => ({ ...validBody(schema), [name]: fields })),
      );
    const item = resolve(field).type === 'array' ? objectOf(resolve(field).items) : undefined;
    if (item && at === '')
      cases.push(
        ...casesOf(route, item, `${name}[0].`, (fields) => ({ ...validBody(schema), [name]: [fields] })),
      );
  }
  return cases;
}

/**
 * Valid bodies where the schema alone cannot make one: a registration is read by the configuration
 * reader, which wants a family it knows before it reads the other fields.
 */
const BASES: Record<string, Record<string, unknown>> = {
  '/v1/models/load': { id: 'registered-here', family: 'fixture' },
};

/** The routes with a body of `type`: their paths. */
const routesWith = (type: string): string[] =>
  Object.entries(DOC.paths as Record<string, Json>).flatMap(([path, item]) =>
    item.post?.requestBody?.content?.[type] ? [path] : [],
  );

const jsonCases = (): Case[] =>
  routesWith('application/json').flatMap((path) =>
    casesOf(path, resolve(DOC.paths[path].post.requestBody.content['application/json'].schema), '', (b) => ({
      ...BASES[path],
      ...b,
    })),
  );

describe('a wrong type in any documented JSON field is a 400 naming it', () => {
  const s = suiteServer(SERVER);
  before(async () => {
    const res = await get(s.url, '/openapi.json');
    assert.equal(res.status, 200);
    DOC = res.json;
  });

  test('every JSON route and field is covered, and each has a wrong value', () => {
    const cases = jsonCases();
    const routes = routesWith('application/json');
    assert.deepEqual(
      cases.filter((c) => c.wrong === undefined).map((c) => `${c.route} ${c.param}`),
      [],
    );
    for (const route of ['/v1/audio/speech', '/v1/tasks/run', '/v1/tasks/batch', '/v1/models/load'])
      assert.ok(routes.includes(route), `${route} has a JSON body in the document`);
    assert.ok(routes.length >= 15, `${routes.length} JSON routes`);
    for (const param of [
      'request.seed',
      'requests[0].seed',
      'seed',
      'voice',
      'reference_text',
      'temperature',
    ])
      assert.ok(
        cases.some((c) => c.param === param),
        `${param} is among the cases`,
      );
  });

  test('each field', async (t) => {
    for (const { route, param, body, wrong } of jsonCases())
      await t.test(`${route} ${param}: ${JSON.stringify(wrong)}`, async () => {
        const res = await post(s.url, route, body);
        const message = errorOf(res, 400, 'invalid_request_error');
        assert.equal(res.json.error.param, param, message);
        assert.ok(message.startsWith(`${param}: `), message);
        assert.ok(message.includes(JSON.stringify(wrong).slice(0, 20)), `the value is shown: ${message}`);
      });
  });
});

/** Candidate wrong text (a query parameter or a form field is text): the first the field refuses is sent. */
const WRONG_TEXT = ['not-a-number', '12.5', '-1', '+1', '', '99999999999999999999', 'maybe'];

interface QueryCase {
  method: 'get' | 'post';
  path: string;
  param: string;
  query: string;
  wrong: string;
}

/** `expected` ("<path> <param>") is one of the cases the document gave. */
function assertAmong(cases: readonly { path: string; param: string }[], expected: string): void {
  assert.ok(
    cases.some((c) => `${c.path} ${c.param}` === expected),
    `${expected} is among the cases`,
  );
}

const queryCases = (): QueryCase[] =>
  Object.entries(DOC.paths as Record<string, Json>).flatMap(([path, item]) =>
    (['get', 'post'] as const).flatMap((method) => {
      const parameters = ((item[method]?.parameters ?? []) as Json[]).filter((p) => p.in === 'query');
      const required = parameters.filter((p) => p.required).map((p) => `${p.name}=x`);
      return parameters.flatMap((p): QueryCase[] => {
        const accepts = ajv.compile(p.schema);
        // Integers and flags are read from their text before the check (src/http/request/schema.ts).
        const read = (text: string) =>
          p.schema.type === 'integer' && /^[0-9]{1,15}$/.test(text) ? Number(text) : text;
        const wrong = WRONG_TEXT.find((text) => !accepts(read(text)));
        if (wrong === undefined) return [];
        const others = required.filter((r) => !r.startsWith(`${p.name}=`));
        const query = [...others, `${p.name}=${encodeURIComponent(wrong)}`].join('&');
        return [{ method, path, param: p.name, query, wrong }];
      });
    }),
  );

describe('a query parameter its schema refuses is a 400 naming it', () => {
  const s = suiteServer(SERVER);

  test('the typed parameters of every route are among the cases', () => {
    const cases = queryCases();
    for (const expected of [
      '/v1/audio/speech busy_timeout_ms',
      '/v1/audio/speech/live sample_rate',
      '/v1/audio/speech/live return_text',
      '/v1/audio/transcriptions/live channels',
      '/v1/audio/transcriptions/live sample_format',
      '/v1/tasks/batch busy_timeout_ms',
    ])
      assertAmong(cases, expected);
  });

  test('parameters named like Object members are parameters: __proto__, constructor', async () => {
    const res = await get(s.url, '/v1/audio/voices?__proto__=x&constructor=y&model=tts');
    assert.equal(res.status, 200);
    const bad = await post(s.url, '/v1/audio/speech?__proto__=x&busy_timeout_ms=soon', {});
    assert.equal(
      errorOf(bad, 400, 'invalid_request_error'),
      'busy_timeout_ms: "soon" is invalid; expected an integer >= 0 (0 waits without limit)',
    );
  });

  test('each parameter', async (t) => {
    for (const { method, path, param, query, wrong } of queryCases())
      await t.test(`${method.toUpperCase()} ${path}?${query}`, async () => {
        const target = `${path.replace('{id}', 'tts')}?${query}`;
        const res = method === 'get' ? await get(s.url, target) : await post(s.url, target, {});
        const message = errorOf(res, 400, 'invalid_request_error');
        assert.equal(res.json.error.param, param, message);
        assert.ok(message.startsWith(`${param}: ${JSON.stringify(wrong)} is invalid`), message);
      });
  });
});

/** A form field that takes a file part: the document says its bytes are its content. */
const isUpload = (schema: Json): boolean =>
  schema?.contentMediaType !== undefined || schema?.items?.contentMediaType !== undefined;

interface FormCase {
  path: string;
  param: string;
  /** The text sent, or undefined for an upload sent as a text field. */
  wrong: string | undefined;
  form: FormData;
}

/**
 * The cases of every multipart form: for each field, the first text the field's schema refuses
 * once read as the server reads it, sent with valid required fields (an upload: a small file).
 * A field that takes any text (a plain string) has no wrong value: it is listed in `anyText`.
 */
function formCases(): { cases: FormCase[]; anyText: string[] } {
  const cases: FormCase[] = [];
  const anyText: string[] = [];
  for (const path of routesWith('multipart/form-data')) {
    const schema = resolve(DOC.paths[path].post.requestBody.content['multipart/form-data'].schema);
    const properties = schema.properties as Record<string, Json>;
    const base = (skip: string) => {
      const form = new FormData();
      for (const name of schema.required ?? []) {
        if (name === skip) continue;
        if (isUpload(properties[name])) form.append(name, new Blob([Buffer.alloc(44)]), 'a.wav');
        else form.append(name, 'x');
      }
      return form;
    };
    for (const [name, field] of Object.entries(properties)) {
      if (isUpload(field)) {
        const form = base(name);
        form.append(name, 'not a file');
        cases.push({ path, param: name, wrong: undefined, form });
        continue;
      }
      const accepts = ajv.compile(field);
      const read = (text: string) =>
        formObject({ lists: new Map([[name, [text]]]), files: [] }, schema).value[name];
      const wrong = WRONG_TEXT.find((text) => {
        try {
          return !accepts(read(text));
        } catch {
          return true;
        }
      });
      if (wrong === undefined) {
        anyText.push(`${path} ${name}`);
        continue;
      }
      const form = base(name);
      form.append(name, wrong);
      cases.push({ path, param: name, wrong, form });
    }
  }
  return { cases, anyText };
}

describe('a form field its schema refuses is a 400 naming it', () => {
  const s = suiteServer(SERVER);

  test('every form field has a wrong value, unless it takes any text', () => {
    const { cases, anyText } = formCases();
    for (const expected of [
      '/v1/audio/transcriptions file',
      '/v1/audio/transcriptions model',
      '/v1/audio/transcriptions temperature',
      '/v1/audio/transcriptions chunking_strategy',
      '/v1/audio/transcriptions options',
      '/v1/audio/transcriptions stream',
      '/v1/audio/transcriptions timestamp_granularities[]',
      '/v1/audio/transcriptions include[]',
      '/v1/audio/transcriptions busy_timeout_ms',
      '/v1/audio/translations response_format',
      '/v1/batches/transcriptions file',
      '/v1/batches/transcriptions options',
    ])
      assertAmong(cases, expected);
    // The fields left out are those whose schema takes any text: a form cannot send them a wrong type.
    for (const entry of anyText) {
      const [path, name] = entry.split(' ') as [string, string];
      const schema = resolve(DOC.paths[path].post.requestBody.content['multipart/form-data'].schema);
      const read = formObject({ lists: new Map([[name, ['any text at all']]]), files: [] }, schema).value[
        name
      ];
      assert.ok(ajv.compile(schema.properties[name])(read), `${entry} takes any text`);
    }
  });

  test('each field', async (t) => {
    for (const { path, param, wrong, form } of formCases().cases)
      await t.test(
        `${path} ${param}: ${wrong === undefined ? 'a text field, no upload' : JSON.stringify(wrong)}`,
        async () => {
          const res = await request(s.url, 'POST', path, { body: form });
          const message = errorOf(res, 400, 'invalid_request_error');
          assert.equal(res.json.error.param, param, message);
          if (wrong === undefined) assert.ok(message.startsWith(`'${param}' is required`), message);
          // "is invalid; expected ...", or for a field that takes JSON text "is not valid JSON (...)".
          else assert.ok(message.startsWith(`${param}: ${JSON.stringify(wrong)} is `), message);
        },
      );
  });
});
