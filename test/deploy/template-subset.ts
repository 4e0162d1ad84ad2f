/**
 * NOT HELM. helm cannot be installed on the machines that run these tests (no network beyond npm
 * and Debian, and Debian 12 does not package it), so this renders the small subset of Go
 * templates and Sprig that deploy/helm/voxd uses, closely enough to check the objects the chart
 * makes. The chart must keep to this subset; anything else throws here rather than render wrong.
 *
 * Supported:
 * - text with actions `{{ ... }}`, whitespace trimming `{{-` and `-}}`, comments `{{/* ... *\/}}`;
 * - `{{ define "name" }}...{{ end }}` (from any file, _helpers.tpl in practice),
 *   `{{ if PIPELINE }}...{{ else }}...{{ end }}` (nestable; no `else if`, `with`, `range`);
 * - pipelines `a | f x | g`, parenthesised sub-pipelines, string and integer literals;
 * - the fields `.Values.*`, `.Release.Name|Namespace|Service`, `.Chart.Name|Version|AppVersion`,
 *   and `.` (always the root: there is no `with` or `range` to rebind it);
 * - the functions include, toYaml, toJson, toPrettyJson, nindent, indent, quote, printf (%s only),
 *   default, required, trunc, trimSuffix, not, and, or, add, div (integers, as Sprig's).
 *
 * Deliberate difference: a `.Values` path that does not exist throws (helm renders it empty), so a
 * typo in a template fails the test instead of rendering a blank.
 */
import { stringify } from 'yaml';

type Value = unknown;
type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; expr: string }
  | { kind: 'if'; cond: string; yes: Node[]; no: Node[] }
  | { kind: 'define'; name: string; body: Node[] };

interface Raw {
  kind: 'text' | 'action';
  text: string;
}

/** Splits a template into text and action pieces, applying the trim markers. */
function lex(source: string): Raw[] {
  const out: Raw[] = [];
  let rest = source;
  let trimNext = false;
  while (rest.length > 0) {
    const open = rest.indexOf('{{');
    let text = open < 0 ? rest : rest.slice(0, open);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (open < 0) {
      out.push({ kind: 'text', text });
      break;
    }
    const close = rest.indexOf('}}', open);
    if (close < 0) throw new Error(`unclosed action: ${rest.slice(open, open + 40)}`);
    let inner = rest.slice(open + 2, close);
    if (inner.startsWith('- ') || inner.startsWith('-\n')) {
      text = text.replace(/\s+$/, '');
      inner = inner.slice(1);
    }
    trimNext = inner.endsWith(' -') || inner.endsWith('\n-');
    if (trimNext) inner = inner.slice(0, -1);
    out.push({ kind: 'text', text });
    inner = inner.trim();
    if (!(inner.startsWith('/*') && inner.endsWith('*/'))) out.push({ kind: 'action', text: inner });
    rest = rest.slice(close + 2);
  }
  return out;
}

/** Builds the tree of if/else/define blocks. */
function parse(source: string): Node[] {
  const root: Node[] = [];
  const stack: { nodes: Node[]; block?: Node; inElse?: boolean }[] = [{ nodes: root }];
  for (const piece of lex(source)) {
    const top = stack.at(-1)!;
    if (piece.kind === 'text') {
      if (piece.text !== '') top.nodes.push({ kind: 'text', text: piece.text });
      continue;
    }
    const word = piece.text.split(/\s+/)[0];
    if (word === 'if') {
      const node: Node = { kind: 'if', cond: piece.text.slice(2).trim(), yes: [], no: [] };
      top.nodes.push(node);
      stack.push({ nodes: node.yes, block: node });
    } else if (word === 'define') {
      const name = /^define\s+"([^"]+)"$/.exec(piece.text)?.[1];
      if (name === undefined) throw new Error(`bad define: ${piece.text}`);
      const node: Node = { kind: 'define', name, body: [] };
      top.nodes.push(node);
      stack.push({ nodes: node.body, block: node });
    } else if (piece.text === 'else') {
      if (top.block?.kind !== 'if' || top.inElse) throw new Error('else outside if');
      stack.pop();
      stack.push({ nodes: top.block.no, block: top.block, inElse: true });
    } else if (piece.text === 'end') {
      if (stack.length === 1) throw new Error('end without a block');
      stack.pop();
    } else if (['with', 'range', 'else if', 'template', 'block'].includes(word ?? '')) {
      throw new Error(`"${word}" is outside the supported subset`);
    } else {
      top.nodes.push({ kind: 'action', expr: piece.text });
    }
  }
  if (stack.length !== 1) throw new Error('unclosed block');
  return root;
}

type Token = { t: 'str' | 'num' | 'field' | 'ident' | '(' | ')' | '|'; v: string };

function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  const re = /\s*(?:("(?:[^"\\]|\\.)*")|(-?\d+)|(\.[A-Za-z0-9_.]*)|([A-Za-z_][A-Za-z0-9_]*)|([()|]))/y;
  let at = 0;
  while (at < expr.length) {
    if (/^\s*$/.test(expr.slice(at))) break;
    re.lastIndex = at;
    const m = re.exec(expr);
    if (m === null) throw new Error(`cannot read "${expr.slice(at)}" in {{ ${expr} }}`);
    at = re.lastIndex;
    if (m[1] !== undefined) out.push({ t: 'str', v: JSON.parse(m[1]) as string });
    else if (m[2] !== undefined) out.push({ t: 'num', v: m[2] });
    else if (m[3] !== undefined) out.push({ t: 'field', v: m[3] });
    else if (m[4] !== undefined) out.push({ t: 'ident', v: m[4] });
    else out.push({ t: m[5] as '(' | ')' | '|', v: m[5]! });
  }
  return out;
}

/** Go templates' truth: false, 0, nil and empty strings, lists and maps are false. */
export function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function toInt(v: Value, fn: string): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n))
    throw new Error(`${fn}: ${JSON.stringify(v)} is not a number`);
  return Math.trunc(n);
}

function indentLines(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return pad + text.replace(/\n/g, `\n${pad}`);
}

export interface ChartContext {
  Values: Record<string, unknown>;
  Release: { Name: string; Namespace: string; Service: string };
  Chart: { Name: string; Version: string; AppVersion: string };
}

export class Renderer {
  readonly #defines = new Map<string, Node[]>();
  readonly #trees = new Map<string, Node[]>();

  /** files: template file name -> source; every file's defines are visible to every other. */
  constructor(files: Record<string, string>) {
    for (const [name, source] of Object.entries(files)) {
      const tree = parse(source);
      this.#trees.set(name, tree);
      for (const node of tree) if (node.kind === 'define') this.#defines.set(node.name, node.body);
    }
  }

  /** Renders one file (its defines render to nothing, as in helm). */
  render(name: string, ctx: ChartContext): string {
    const tree = this.#trees.get(name);
    if (tree === undefined) throw new Error(`no template ${name}`);
    return this.#nodes(tree, ctx);
  }

  #nodes(nodes: Node[], ctx: ChartContext): string {
    let out = '';
    for (const node of nodes) {
      if (node.kind === 'text') out += node.text;
      else if (node.kind === 'action') out += this.#print(this.#pipeline(tokenize(node.expr), ctx));
      else if (node.kind === 'if') {
        const branch = truthy(this.#pipeline(tokenize(node.cond), ctx)) ? node.yes : node.no;
        out += this.#nodes(branch, ctx);
      }
    }
    return out;
  }

  #print(v: Value): string {
    if (v === undefined || v === null) return '';
    if (typeof v === 'object') throw new Error(`printing a map or list needs toYaml: ${JSON.stringify(v)}`);
    return String(v);
  }

  #pipeline(tokens: Token[], ctx: ChartContext): Value {
    const commands: Token[][] = [[]];
    let depth = 0;
    for (const tok of tokens) {
      if (tok.t === '(') depth += 1;
      if (tok.t === ')') depth -= 1;
      if (tok.t === '|' && depth === 0) commands.push([]);
      else commands.at(-1)!.push(tok);
    }
    let value: Value;
    commands.forEach((command, i) => {
      const piped = i === 0 ? [] : [value];
      const [head] = command;
      if (head === undefined) throw new Error('empty command in a pipeline');
      if (head.t === 'ident' && !['true', 'false'].includes(head.v)) {
        value = this.#call(head.v, [...this.#terms(command.slice(1), ctx), ...piped], ctx);
      } else {
        if (i > 0) throw new Error(`cannot pipe into a value: ${head.v}`);
        const terms = this.#terms(command, ctx);
        if (terms.length !== 1)
          throw new Error(`a value with arguments: ${command.map((t) => t.v).join(' ')}`);
        value = terms[0];
      }
    });
    return value;
  }

  /** Evaluates a list of arguments: literals, fields and parenthesised pipelines. */
  #terms(tokens: Token[], ctx: ChartContext): Value[] {
    const out: Value[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const tok = tokens[i]!;
      if (tok.t === '(') {
        let depth = 1;
        let j = i + 1;
        for (; j < tokens.length && depth > 0; j++) {
          if (tokens[j]!.t === '(') depth += 1;
          if (tokens[j]!.t === ')') depth -= 1;
        }
        if (depth !== 0) throw new Error('unbalanced parentheses');
        out.push(this.#pipeline(tokens.slice(i + 1, j - 1), ctx));
        i = j - 1;
      } else if (tok.t === 'str') out.push(tok.v);
      else if (tok.t === 'num') out.push(Number(tok.v));
      else if (tok.t === 'field') out.push(this.#field(tok.v, ctx));
      else if (tok.t === 'ident' && (tok.v === 'true' || tok.v === 'false')) out.push(tok.v === 'true');
      else throw new Error(`unexpected ${tok.v}`);
    }
    return out;
  }

  #field(path: string, ctx: ChartContext): Value {
    if (path === '.') return ctx;
    let v: Value = ctx;
    const parts = path.slice(1).split('.');
    for (const [i, part] of parts.entries()) {
      if (v === null || typeof v !== 'object' || !(part in v)) {
        throw new Error(`${path}: ${parts.slice(0, i + 1).join('.')} is not set`);
      }
      v = (v as Record<string, unknown>)[part];
    }
    return v;
  }

  #call(fn: string, args: Value[], ctx: ChartContext): Value {
    const arity = (n: number) => {
      if (args.length !== n) throw new Error(`${fn} takes ${n} arguments, got ${args.length}`);
    };
    switch (fn) {
      case 'include': {
        arity(2);
        const body = this.#defines.get(String(args[0]));
        if (body === undefined) throw new Error(`include: no template "${args[0]}"`);
        if (args[1] !== ctx) throw new Error('include: only "." is supported as the context');
        return this.#nodes(body, ctx);
      }
      case 'toYaml':
        arity(1);
        // helm: yaml.Marshal without the final newline.
        return stringify(args[0]).replace(/\n$/, '');
      case 'toJson':
        arity(1);
        return JSON.stringify(args[0]);
      case 'toPrettyJson':
        arity(1);
        return JSON.stringify(args[0], null, 2);
      case 'nindent':
        arity(2);
        return `\n${indentLines(String(args[1]), toInt(args[0], fn))}`;
      case 'indent':
        arity(2);
        return indentLines(String(args[1]), toInt(args[0], fn));
      case 'quote':
        arity(1);
        return JSON.stringify(args[0] === undefined || args[0] === null ? '' : String(args[0]));
      case 'printf': {
        const [format, ...rest] = args;
        let k = 0;
        return String(format).replace(/%s/g, () => String(rest[k++]));
      }
      case 'default':
        arity(2);
        return truthy(args[1]) ? args[1] : args[0];
      case 'required':
        arity(2);
        if (args[1] === undefined || args[1] === null || args[1] === '') throw new Error(String(args[0]));
        return args[1];
      case 'trunc':
        arity(2);
        return String(args[1]).slice(0, toInt(args[0], fn));
      case 'trimSuffix': {
        arity(2);
        const [suffix, s] = [String(args[0]), String(args[1])];
        return suffix !== '' && s.endsWith(suffix) ? s.slice(0, -suffix.length) : s;
      }
      case 'not':
        arity(1);
        return !truthy(args[0]);
      case 'and':
        return args.find((a) => !truthy(a)) ?? args.at(-1);
      case 'or':
        return args.find((a) => truthy(a)) ?? args.at(-1);
      case 'add':
        return args.reduce<number>((sum, a) => sum + toInt(a, fn), 0);
      case 'div': {
        arity(2);
        const d = toInt(args[1], fn);
        if (d === 0) throw new Error('div by zero');
        return Math.trunc(toInt(args[0], fn) / d);
      }
      default:
        throw new Error(`function "${fn}" is outside the supported subset`);
    }
  }
}

/** helm's values merge: maps merge key by key, anything else replaces. */
export function mergeValues(base: unknown, over: unknown): unknown {
  if (
    base === null ||
    over === null ||
    typeof base !== 'object' ||
    typeof over !== 'object' ||
    Array.isArray(base) ||
    Array.isArray(over)
  ) {
    return over === undefined ? base : over;
  }
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over as Record<string, unknown>)) out[k] = mergeValues(out[k], v);
  return out;
}
