/**
 * Text read as the schema's types. A form field (and a query parameter) is always text, and a JSON
 * client may send `"0.5"` or `'{"type":"server_vad"}'` where a number or an object goes; before a
 * schema checks them, each is read as the type its field's schema declares, as fastify coerces
 * querystrings. Text that does not spell that type stays text, so the schema refuses it and the
 * message shows what the client wrote.
 */
import type { TSchema } from '@sinclair/typebox';
import { parseJsonText } from '../../util/json-text.js';

const FLAGS: Record<string, boolean> = {
  true: true,
  True: true,
  1: true,
  false: false,
  False: false,
  0: false,
};
const INTEGER = /^[0-9]{1,15}$/;
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$/;

/** The kinds of value a field's schema takes, null left out (null is absent, to voxd). */
function branchesOf(schema: TSchema | undefined): TSchema[] {
  if (!schema) return [];
  const union = (schema['anyOf'] ?? schema['oneOf']) as TSchema[] | undefined;
  if (!union) return schema['type'] === 'null' ? [] : [schema];
  return union.flatMap(branchesOf);
}

const typeOf = (schema: TSchema): unknown => schema['type'];

/**
 * `text` as the first of the field's kinds that it spells: an object or array (JSON text; for a
 * field that takes no string, any text is read as JSON), an integer (digits only: "+16000" and
 * "16000junk" stay text), a number, a flag; else the text. `field` names the text in the message
 * when JSON text does not parse.
 */
export function readText(text: string, schema: TSchema | undefined, field: string): unknown {
  const types = new Set(branchesOf(schema).map(typeOf));
  const trimmed = text.trimStart();
  // A field that takes no string is JSON text whatever it starts with (a bad one: "is not valid JSON").
  const json = (type: string, open: string) =>
    types.has(type) && (trimmed.startsWith(open) || !types.has('string'));
  if (json('object', '{') || json('array', '[')) return parseJsonText(text, field);
  if (types.has('integer') && INTEGER.test(text)) return Number(text);
  if (types.has('number') && DECIMAL.test(text)) return Number(text);
  // Own keys only: "constructor" is no flag.
  if (types.has('boolean') && Object.hasOwn(FLAGS, text)) return FLAGS[text];
  return text;
}

/** The schema of each item when the field takes a list (an array, or one value or an array). */
function itemsOf(schema: TSchema | undefined): TSchema | undefined {
  const list = branchesOf(schema).find((branch) => typeOf(branch) === 'array');
  return list?.['items'] as TSchema | undefined;
}

/** A multipart body's parts: every value of each plain field in order, and the file parts. */
export interface FormParts {
  lists: ReadonlyMap<string, readonly string[]>;
  files: readonly { field: string; filename: string }[];
}

/** A field the schema fills with a file part (an upload: its bytes, as OpenAPI describes them). */
const isUpload = (schema: TSchema | undefined) =>
  [schema, itemsOf(schema)].some((s) => s !== undefined && s['contentMediaType'] !== undefined);

const propertiesOf = (schema: TSchema) => (schema['properties'] ?? {}) as Record<string, TSchema>;

/**
 * A multipart body as its form schema sees it: each field read from its text, a list field
 * (repeated `name[]` parts) as the array of its values, a file part as its file name. `text` is the
 * same with every value as the client wrote it, for messages. Without a schema entry a field is
 * its last value, as text.
 */
export function formObject(
  parts: FormParts,
  schema: TSchema,
): { value: Record<string, unknown>; text: Record<string, unknown> } {
  const properties = propertiesOf(schema);
  // No prototype: a field named __proto__ or constructor is a field like any other.
  const value: Record<string, unknown> = Object.create(null);
  const text: Record<string, unknown> = Object.create(null);
  for (const [name, values] of parts.lists) {
    const field = Object.hasOwn(properties, name) ? properties[name] : undefined;
    // A plain text field named like an upload is not one: only a file part fills it.
    if (isUpload(field)) continue;
    const items = itemsOf(field);
    const listed = items !== undefined && (values.length > 1 || branchesOf(field).length === 1);
    if (listed) {
      text[name] = [...values];
      value[name] = values.map((one) => readText(one, items, name));
    } else {
      const last = values[values.length - 1]!;
      text[name] = last;
      value[name] = readText(last, field, name);
    }
  }
  for (const { field, filename } of parts.files) {
    const many = Object.hasOwn(properties, field) && itemsOf(properties[field]) !== undefined;
    const names = many ? [...((value[field] as string[] | undefined) ?? []), filename] : filename;
    value[field] = names;
    text[field] = names;
  }
  return { value, text };
}

/**
 * A JSON body with its text fields read as their schema's types (only the top level: a form
 * field's text is what JSON clients of the same route send).
 */
export function readTextFields(body: Record<string, unknown>, schema: TSchema): Record<string, unknown> {
  const properties = propertiesOf(schema);
  const out: Record<string, unknown> = { ...body };
  for (const [name, field] of Object.entries(body))
    if (typeof field === 'string' && Object.hasOwn(properties, name))
      out[name] = readText(field, properties[name], name);
  return out;
}
