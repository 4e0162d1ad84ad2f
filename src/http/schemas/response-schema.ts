/**
 * The building blocks of the response schemas (src/http/schemas/*-responses.ts). Engines add fields
 * to their answers and answers grow fields over time, so a response object checks the fields it
 * knows and allows others. Nullable types and closed sets are written as plain JSON Schema
 * (`type: ['integer', 'null']`, `enum`) rather than TypeBox's `anyOf` and `const` forms, which say
 * the same in more words.
 */
import {
  type Static,
  type TObject,
  type TOptional,
  type TProperties,
  type TSchema,
  Type,
} from '@sinclair/typebox';

/** The properties of `object(properties, required)`: those not required are optional. */
type Fields<P extends TProperties, R extends keyof P> = {
  [K in keyof P]: K extends R ? P[K] : TOptional<P[K]>;
};

interface Options {
  /** The component name, for a schema the document publishes. */
  title?: string;
  description?: string;
}

/** A response object: the `required` fields must be there, the other known ones are checked if there, others are let through. */
export function object<P extends TProperties, R extends keyof P & string = never>(
  properties: P,
  required: readonly R[] = [],
  options: Options | string = {},
): TObject<Fields<P, R>> {
  const fields = Object.fromEntries(
    Object.entries(properties).map(([name, schema]) => [
      name,
      required.includes(name as R) ? schema : Type.Optional(schema),
    ]),
  ) as Fields<P, R>;
  const { title, description } = typeof options === 'string' ? { description: options } : options;
  return Type.Object(fields, {
    additionalProperties: true,
    ...(title ? { title } : {}),
    ...(description ? { description } : {}),
  });
}

/**
 * A reference to a published schema (`#/components/schemas/<title>`), typed as the schema itself,
 * so that the document names a shared object once and handlers still get its type.
 */
export function componentRef<T extends TSchema>(schema: T) {
  if (!schema.title) throw new Error('componentRef: the schema has no title');
  return Type.Unsafe<Static<T>>({ $ref: `#/components/schemas/${schema.title}` });
}

const described = (description?: string) => (description ? { description } : {});

export const str = (description?: string) => Type.String(described(description));
export const int = (description?: string) => Type.Integer(described(description));
export const num = (description?: string) => Type.Number(described(description));
export const bool = (description?: string) => Type.Boolean(described(description));
export const arrayOf = <T extends TSchema>(items: T) => Type.Array(items);

interface Nullable {
  string: string | null;
  integer: number | null;
  number: number | null;
}
/** A value of `type`, or null. */
export const nullable = <K extends keyof Nullable>(type: K, description?: string) =>
  Type.Unsafe<Nullable[K]>({ type: [type, 'null'], ...described(description) });

/** An object of anything (engine options, as the engine took them). */
export const anyObject = () =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });
