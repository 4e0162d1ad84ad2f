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
import type { ErrorObject } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { invalidField, showValue } from '../errors.js';

/** The words of a field's expectation in an error message (`expected <this>`). */
const EXPECTED = 'x-expected';

const ajv = new Ajv2020({ strict: false, allErrors: false });
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
function fieldPath(pointer: string): string {
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

/** What the schema at `pointer` (a path of property names inside `root`) expects, in words. */
function expectation(root: TSchema, pointer: string): string {
  let schema: TSchema | undefined = root;
  for (const part of pointer.split('/').slice(1)) {
    const properties = schema?.['properties'] as Record<string, TSchema> | undefined;
    schema = properties?.[part] ?? (schema?.['items'] as TSchema | undefined);
  }
  if (!schema) return 'a valid value';
  return typeof schema[EXPECTED] === 'string' ? schema[EXPECTED] : typeWords(schema);
}

/** The value at `pointer` in `body`. */
function valueAt(body: unknown, pointer: string): unknown {
  let value = body;
  for (const part of pointer.split('/').slice(1))
    value = (value as Record<string, unknown> | undefined)?.[
      part.replaceAll('~1', '/').replaceAll('~0', '~')
    ];
  return value;
}

/**
 * The 400 of the first mismatch. Errors inside a union's branches are reported at the union: a
 * voice that is neither a string nor `{"id"}` is a bad `voice`, not a bad `voice.id`.
 */
function mismatch(root: TSchema, body: unknown, errors: readonly ErrorObject[]) {
  const union = errors.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  const error = union ?? errors[0]!;
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    const pointer = `${error.instancePath}/${missing}`;
    return invalidField(
      fieldPath(pointer),
      `'${fieldPath(pointer)}' is required: expected ${expectation(root, pointer)}`,
    );
  }
  const path = fieldPath(error.instancePath);
  return invalidField(
    path,
    `${path}: ${showValue(valueAt(body, error.instancePath))} is invalid; expected ${expectation(root, error.instancePath)}`,
  );
}

/** A checker of bodies against `schema`, compiled now: it returns the body typed, or throws the 400. */
export function bodyChecker<T extends TSchema>(schema: T): (body: Record<string, unknown>) => Static<T> {
  const validate = ajv.compile(schema);
  return (body) => {
    if (!validate(body)) throw mismatch(schema, body, validate.errors ?? []);
    return body as Static<T>;
  };
}
