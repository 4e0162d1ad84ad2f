/**
 * Every documented field of every JSON route refuses a value of the wrong type: for each property
 * of each `application/json` request body of the OpenAPI document (the schema the route checks
 * with), and for the fields of its nested request objects (`request.seed`, `requests[0].seed`), a
 * value the field's own schema refuses is sent alongside valid required fields, and the answer must
 * be a 400 whose `param` is that field's path and whose message shows the value. The query
 * parameters of every route are tried the same way, with text their schema refuses. No field is
 * listed by hand: a new route or field is tested as soon as the document has it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ROUTES } from '../../src/http/index.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import { suiteServer } from '../helpers/suite-server.js';
import { errorOf, fixtureModel, get, post } from '../helpers/voxd.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON
type Json = any;

const DOC: Json = buildOpenApi(ROUTES);
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

const routes = Object.entries(DOC.paths as Record<string, Json>).flatMap(([path, item]) =>
  item.post?.requestBody?.content?.['application/json'] ? [path] : [],
);
const cases = routes.flatMap((path) =>
  casesOf(path, resolve(DOC.paths[path].post.requestBody.content['application/json'].schema), '', (b) => ({
    ...BASES[path],
    ...b,
  })),
);

describe('a wrong type in any documented JSON field is a 400 naming it', () => {
  const s = suiteServer(SERVER);

  test('every JSON route and field is covered, and each has a wrong value', () => {
    assert.deepEqual(
      cases.filter((c) => c.wrong === undefined).map((c) => `${c.route} ${c.param}`),
      [],
    );
    for (const route of ['/v1/audio/speech', '/v1/tasks/run', '/v1/tasks/batch', '/v1/models/load'])
      assert.ok(routes.includes(route), `${route} has a JSON body in the document`);
    assert.ok(routes.length >= 15, `${routes.length} JSON routes`);
    for (const param of ['request.seed', 'requests[0].seed', 'seed', 'voice'])
      assert.ok(
        cases.some((c) => c.param === param),
        `${param} is among the cases`,
      );
  });

  for (const { route, param, body, wrong } of cases)
    test(`${route} ${param}: ${JSON.stringify(wrong)}`, async () => {
      const res = await post(s.url, route, body);
      const message = errorOf(res, 400, 'invalid_request_error');
      assert.equal(res.json.error.param, param, message);
      assert.ok(message.startsWith(`${param}: `), message);
      assert.ok(message.includes(JSON.stringify(wrong).slice(0, 20)), `the value is shown: ${message}`);
    });
});

/** Candidate wrong query values (a query is text): the first the parameter's schema refuses is sent. */
const WRONG_TEXT = ['not-a-number', '12.5', '-1', '+1', '', '99999999999999999999', 'maybe'];

interface QueryCase {
  method: 'get' | 'post';
  path: string;
  param: string;
  query: string;
  wrong: string;
}

const queryCases: QueryCase[] = Object.entries(DOC.paths as Record<string, Json>).flatMap(([path, item]) =>
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
    for (const expected of [
      '/v1/audio/speech busy_timeout_ms',
      '/v1/audio/speech/live sample_rate',
      '/v1/audio/speech/live return_text',
      '/v1/audio/transcriptions/live channels',
      '/v1/audio/transcriptions/live sample_format',
      '/v1/tasks/batch busy_timeout_ms',
    ])
      assert.ok(
        queryCases.some((c) => `${c.path} ${c.param}` === expected),
        `${expected} is among the cases`,
      );
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

  for (const { method, path, param, query, wrong } of queryCases)
    test(`${method.toUpperCase()} ${path}?${query}`, async () => {
      const target = `${path.replace('{id}', 'tts')}?${query}`;
      const res = method === 'get' ? await get(s.url, target) : await post(s.url, target, {});
      const message = errorOf(res, 400, 'invalid_request_error');
      assert.equal(res.json.error.param, param, message);
      assert.ok(message.startsWith(`${param}: ${JSON.stringify(wrong)} is invalid`), message);
    });
});
