/**
 * DynamoDB's expression languages (condition, update, key condition, projection) for the
 * in-memory table twin: a tokenizer, a parser to a small tree, and an evaluator over plain
 * document-client values (string, number, boolean, null, Uint8Array, arrays, Sets, maps).
 *
 * It follows DynamoDB's documented semantics where the adapters can reach them:
 *  - a comparison with a missing attribute, or between values of different types, is false
 *    (`<>` is true), never an error;
 *  - `attribute_exists`, `attribute_not_exists`, `attribute_type`, `begins_with`,
 *    `contains`, `size`, `BETWEEN` (reversed bounds are a ValidationException), `IN`;
 *  - update actions SET (with `+`/`-`, `if_not_exists`, `list_append`), REMOVE, ADD
 *    (numbers and sets), DELETE (sets); two actions on overlapping paths are rejected;
 *  - every `#name` and `:value` must be defined, and every defined one used (the caller
 *    checks use with {@link Placeholders.unused}).
 * Errors are thrown as {@link ExpressionError} (the table turns them into ValidationException).
 */

/** A malformed or invalid expression: DynamoDB answers ValidationException. */
export class ExpressionError extends Error {
  override name = 'ExpressionError';
}

export type DocValue = unknown;
export type Item = Record<string, DocValue>;

// ---------------------------------------------------------------------------- tokens

type Token = { kind: 'name' | 'placeholder' | 'value' | 'number' | 'op' | 'end'; text: string };

const OPERATORS = ['<>', '<=', '>=', '=', '<', '>', '(', ')', ',', '.', '[', ']', '+', '-'];

function tokenize(source: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const word = /^[#:]?[A-Za-z0-9_]+/.exec(source.slice(i));
    if (word) {
      const text = word[0];
      const kind = text.startsWith('#') ? 'placeholder' : text.startsWith(':') ? 'value' : /^\d+$/.test(text) ? 'number' : 'name';
      out.push({ kind, text });
      i += text.length;
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (!op) throw new ExpressionError(`Invalid expression: syntax error; token: "${c}", near: "${source.slice(i, i + 10)}"`);
    out.push({ kind: 'op', text: op });
    i += op.length;
  }
  out.push({ kind: 'end', text: '' });
  return out;
}

// ---------------------------------------------------------------------------- placeholders

/** The expression attribute names and values of one request, recording which were used. */
export class Placeholders {
  private readonly names: Record<string, string>;
  private readonly values: Record<string, DocValue>;
  private readonly usedNames = new Set<string>();
  private readonly usedValues = new Set<string>();

  constructor(names: Record<string, string> | undefined, values: Record<string, DocValue> | undefined) {
    this.names = names ?? {};
    this.values = values ?? {};
  }

  name(placeholder: string): string {
    const n = this.names[placeholder];
    if (n === undefined) throw new ExpressionError(`An expression attribute name used in the document path is not defined; attribute name: ${placeholder}`);
    this.usedNames.add(placeholder);
    return n;
  }

  value(placeholder: string): DocValue {
    if (!(placeholder in this.values)) throw new ExpressionError(`An expression attribute value used in expression is not defined; attribute value: ${placeholder}`);
    this.usedValues.add(placeholder);
    return this.values[placeholder];
  }

  /** DynamoDB rejects a request that defines names or values its expressions do not use. */
  checkAllUsed(): void {
    const names = Object.keys(this.names).filter((k) => !this.usedNames.has(k));
    if (names.length > 0) throw new ExpressionError(`Value provided in ExpressionAttributeNames unused in expressions: keys: {${names.join(', ')}}`);
    const values = Object.keys(this.values).filter((k) => !this.usedValues.has(k));
    if (values.length > 0) throw new ExpressionError(`Value provided in ExpressionAttributeValues unused in expressions: keys: {${values.join(', ')}}`);
  }
}

// ---------------------------------------------------------------------------- trees

/** A document path: attribute names and list indexes. */
export type Path = readonly (string | number)[];

type Operand =
  | { kind: 'path'; path: Path }
  | { kind: 'value'; value: DocValue }
  | { kind: 'size'; path: Path }
  | { kind: 'if_not_exists'; path: Path; fallback: Operand }
  | { kind: 'list_append'; a: Operand; b: Operand }
  | { kind: 'arith'; op: '+' | '-'; a: Operand; b: Operand };

export type Condition =
  | { kind: 'and' | 'or'; a: Condition; b: Condition }
  | { kind: 'not'; a: Condition }
  | { kind: 'compare'; op: string; a: Operand; b: Operand }
  | { kind: 'between'; a: Operand; lo: Operand; hi: Operand }
  | { kind: 'in'; a: Operand; list: Operand[] }
  | { kind: 'fn'; name: string; path: Path; arg?: Operand };

export interface UpdateActions {
  readonly set: readonly { path: Path; value: Operand }[];
  readonly remove: readonly Path[];
  readonly add: readonly { path: Path; value: DocValue }[];
  readonly delete: readonly { path: Path; value: DocValue }[];
}

const RESERVED_CHECKED = new Set(
  // A few of DynamoDB's reserved words (the full list has 573): those an attribute of this
  // project could plausibly be called. A reserved word must go through a #placeholder.
  ['owner', 'token', 'state', 'status', 'name', 'size', 'count', 'key', 'value', 'data', 'date', 'time', 'timestamp', 'type', 'user', 'order', 'group', 'source', 'range', 'hash', 'table', 'index', 'level', 'year'],
);

class Parser {
  private readonly t: Token[];
  private i = 0;
  private readonly p: Placeholders;

  constructor(source: string, p: Placeholders) {
    this.t = tokenize(source);
    this.p = p;
  }

  private peek(offset = 0): Token {
    return this.t[Math.min(this.i + offset, this.t.length - 1)]!;
  }
  private next(): Token {
    return this.t[this.i++]!;
  }
  private isWord(word: string, offset = 0): boolean {
    const k = this.peek(offset);
    return k.kind === 'name' && k.text.toUpperCase() === word;
  }
  private expectOp(op: string): void {
    const k = this.next();
    if (k.kind !== 'op' || k.text !== op) throw new ExpressionError(`Invalid expression: syntax error; expected "${op}", got "${k.text}"`);
  }
  end(): void {
    if (this.peek().kind !== 'end') throw new ExpressionError(`Invalid expression: syntax error; unexpected "${this.peek().text}"`);
  }

  path(): Path {
    const out: (string | number)[] = [this.pathName()];
    for (;;) {
      if (this.peek().kind === 'op' && this.peek().text === '.') {
        this.next();
        out.push(this.pathName());
      } else if (this.peek().kind === 'op' && this.peek().text === '[') {
        this.next();
        const n = this.next();
        if (n.kind !== 'number') throw new ExpressionError('Invalid expression: list index must be a number');
        out.push(Number(n.text));
        this.expectOp(']');
      } else return out;
    }
  }
  private pathName(): string {
    const k = this.next();
    if (k.kind === 'placeholder') return this.p.name(k.text);
    if (k.kind === 'name') {
      if (RESERVED_CHECKED.has(k.text.toLowerCase())) throw new ExpressionError(`Invalid expression: Attribute name is a reserved keyword; reserved keyword: ${k.text}`);
      return k.text;
    }
    throw new ExpressionError(`Invalid expression: syntax error; expected an attribute, got "${k.text}"`);
  }

  operand(): Operand {
    const k = this.peek();
    if (k.kind === 'value') {
      this.next();
      return { kind: 'value', value: this.p.value(k.text) };
    }
    if (k.kind === 'name' && this.peek(1).kind === 'op' && this.peek(1).text === '(') {
      const fn = k.text;
      this.next();
      this.next();
      let r: Operand;
      if (fn === 'size') r = { kind: 'size', path: this.path() };
      else if (fn === 'if_not_exists') {
        const path = this.path();
        this.expectOp(',');
        r = { kind: 'if_not_exists', path, fallback: this.setOperand() };
      } else if (fn === 'list_append') {
        const a = this.setOperand();
        this.expectOp(',');
        r = { kind: 'list_append', a, b: this.setOperand() };
      } else throw new ExpressionError(`Invalid expression: Invalid function name; function: ${fn}`);
      this.expectOp(')');
      return r;
    }
    return { kind: 'path', path: this.path() };
  }

  /** A SET right-hand side: operand, optionally `+` or `-` another. */
  setValue(): Operand {
    const a = this.setOperand();
    const k = this.peek();
    if (k.kind === 'op' && (k.text === '+' || k.text === '-')) {
      this.next();
      return { kind: 'arith', op: k.text, a, b: this.setOperand() };
    }
    return a;
  }
  private setOperand(): Operand {
    return this.operand();
  }

  condition(): Condition {
    let a = this.conjunction();
    while (this.isWord('OR')) {
      this.next();
      a = { kind: 'or', a, b: this.conjunction() };
    }
    return a;
  }
  private conjunction(): Condition {
    let a = this.negation();
    while (this.isWord('AND')) {
      this.next();
      a = { kind: 'and', a, b: this.negation() };
    }
    return a;
  }
  private negation(): Condition {
    if (this.isWord('NOT')) {
      this.next();
      return { kind: 'not', a: this.negation() };
    }
    return this.primary();
  }
  private primary(): Condition {
    const k = this.peek();
    if (k.kind === 'op' && k.text === '(') {
      this.next();
      const c = this.condition();
      this.expectOp(')');
      return c;
    }
    const fns = ['attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains'];
    if (k.kind === 'name' && fns.includes(k.text) && this.peek(1).text === '(') {
      this.next();
      this.next();
      const path = this.path();
      let arg: Operand | undefined;
      if (k.text !== 'attribute_exists' && k.text !== 'attribute_not_exists') {
        this.expectOp(',');
        arg = this.operand();
      }
      this.expectOp(')');
      return { kind: 'fn', name: k.text, path, ...(arg ? { arg } : {}) };
    }
    const a = this.operand();
    if (this.isWord('BETWEEN')) {
      this.next();
      const lo = this.operand();
      if (!this.isWord('AND')) throw new ExpressionError('Invalid expression: BETWEEN needs AND');
      this.next();
      return { kind: 'between', a, lo, hi: this.operand() };
    }
    if (this.isWord('IN')) {
      this.next();
      this.expectOp('(');
      const list = [this.operand()];
      while (this.peek().text === ',') {
        this.next();
        list.push(this.operand());
      }
      this.expectOp(')');
      return { kind: 'in', a, list };
    }
    const op = this.next();
    if (op.kind !== 'op' || !['=', '<>', '<', '<=', '>', '>='].includes(op.text)) throw new ExpressionError(`Invalid expression: syntax error; expected a comparator, got "${op.text}"`);
    return { kind: 'compare', op: op.text, a, b: this.operand() };
  }

  projection(): Path[] {
    const out = [this.path()];
    while (this.peek().text === ',') {
      this.next();
      out.push(this.path());
    }
    return out;
  }

  update(): UpdateActions {
    const set: { path: Path; value: Operand }[] = [];
    const remove: Path[] = [];
    const add: { path: Path; value: DocValue }[] = [];
    const del: { path: Path; value: DocValue }[] = [];
    const seen = new Set<string>();
    while (this.peek().kind !== 'end') {
      const clause = this.next();
      const word = clause.text.toUpperCase();
      if (clause.kind !== 'name' || !['SET', 'REMOVE', 'ADD', 'DELETE'].includes(word)) throw new ExpressionError(`Invalid UpdateExpression: syntax error; token: "${clause.text}"`);
      if (seen.has(word)) throw new ExpressionError(`Invalid UpdateExpression: The "${word}" section can only be used once in an update expression`);
      seen.add(word);
      do {
        if (this.peek().text === ',') this.next();
        const path = this.path();
        if (word === 'SET') {
          this.expectOp('=');
          set.push({ path, value: this.setValue() });
        } else if (word === 'REMOVE') remove.push(path);
        else {
          const v = this.next();
          if (v.kind !== 'value') throw new ExpressionError(`Invalid UpdateExpression: ${word} takes an expression attribute value`);
          (word === 'ADD' ? add : del).push({ path, value: this.p.value(v.text) });
        }
      } while (this.peek().text === ',');
    }
    const all = [...set.map((s) => s.path), ...remove, ...add.map((a) => a.path), ...del.map((d) => d.path)];
    for (let x = 0; x < all.length; x++)
      for (let y = x + 1; y < all.length; y++) {
        const [a, b] = [all[x]!, all[y]!];
        const n = Math.min(a.length, b.length);
        if (a.slice(0, n).every((s, i) => s === b[i])) throw new ExpressionError(`Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${a.join(', ')}], path two: [${b.join(', ')}]`);
      }
    return { set, remove, add, delete: del };
  }
}

/** Parses a condition (ConditionExpression, FilterExpression, KeyConditionExpression). */
export function parseCondition(source: string, p: Placeholders): Condition {
  const parser = new Parser(source, p);
  const c = parser.condition();
  parser.end();
  return c;
}

/** Parses an UpdateExpression. */
export function parseUpdate(source: string, p: Placeholders): UpdateActions {
  const parser = new Parser(source, p);
  const u = parser.update();
  parser.end();
  return u;
}

/** Parses a ProjectionExpression into paths. */
export function parseProjection(source: string, p: Placeholders): Path[] {
  const parser = new Parser(source, p);
  const out = parser.projection();
  parser.end();
  return out;
}

// ---------------------------------------------------------------------------- evaluation

/** An absent attribute (a stored value is never undefined). */
export const MISSING = Symbol('missing');

/** The value at a path, or MISSING. */
export function getPath(item: Item, path: Path): DocValue | typeof MISSING {
  // MISSING (not undefined) marks an absent attribute: a stored value is never undefined.
  let v: DocValue = item;
  for (const step of path) {
    if (typeof step === 'number') {
      if (!Array.isArray(v) || step >= v.length) return MISSING;
      v = v[step];
    } else {
      if (!isMap(v) || !(step in v)) return MISSING;
      v = (v as Item)[step];
    }
  }
  return v;
}

function isMap(v: DocValue): v is Item {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Set) && !(v instanceof Uint8Array);
}

/** DynamoDB's type of a document value: S, N, B, BOOL, NULL, L, M, SS, NS, BS. */
export function typeOf(v: DocValue): string {
  if (typeof v === 'string') return 'S';
  if (typeof v === 'number' || typeof v === 'bigint') return 'N';
  if (typeof v === 'boolean') return 'BOOL';
  if (v === null) return 'NULL';
  if (v instanceof Uint8Array) return 'B';
  if (Array.isArray(v)) return 'L';
  if (v instanceof Set) {
    const first = v.values().next().value as DocValue;
    return typeof first === 'number' ? 'NS' : first instanceof Uint8Array ? 'BS' : 'SS';
  }
  return 'M';
}

function resolve(o: Operand, item: Item): DocValue | typeof MISSING {
  switch (o.kind) {
    case 'value':
      return o.value;
    case 'path':
      return getPath(item, o.path);
    case 'size': {
      const v = getPath(item, o.path);
      if (v === MISSING) return MISSING;
      if (typeof v === 'string') return Buffer.byteLength(v);
      if (v instanceof Uint8Array) return v.byteLength;
      if (Array.isArray(v)) return v.length;
      if (v instanceof Set) return v.size;
      if (isMap(v)) return Object.keys(v).length;
      return MISSING;
    }
    case 'if_not_exists': {
      const v = getPath(item, o.path);
      return v === MISSING ? resolve(o.fallback, item) : v;
    }
    case 'list_append': {
      const a = resolve(o.a, item);
      const b = resolve(o.b, item);
      if (!Array.isArray(a) || !Array.isArray(b)) throw new ExpressionError('Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: list_append');
      return [...a, ...b];
    }
    case 'arith': {
      const a = resolve(o.a, item);
      const b = resolve(o.b, item);
      if (a === MISSING || b === MISSING) throw new ExpressionError('The provided expression refers to an attribute that does not exist in the item');
      if (typeof a !== 'number' || typeof b !== 'number') throw new ExpressionError(`Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ${o.op}`);
      return o.op === '+' ? a + b : a - b;
    }
  }
}

function equal(a: DocValue, b: DocValue): boolean {
  if (typeOf(a) !== typeOf(b)) return false;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.from(a).equals(Buffer.from(b));
  if (a instanceof Set && b instanceof Set) return a.size === b.size && [...a].every((x) => [...b].some((y) => equal(x, y)));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && equal(a[k], b[k]));
  }
  return a === b;
}

/** -1, 0, 1 for two values DynamoDB can order (same scalar type N, S or B); undefined otherwise. */
export function order(a: DocValue, b: DocValue): number | undefined {
  const t = typeOf(a);
  if (t !== typeOf(b)) return undefined;
  if (t === 'N') return Math.sign(Number(a) - Number(b));
  if (t === 'S') return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
  if (t === 'B') return Math.sign(Buffer.compare(Buffer.from(a as Uint8Array), Buffer.from(b as Uint8Array)));
  return undefined;
}

/** Evaluates a condition on an item (an absent item is `{}`). */
export function evaluate(c: Condition, item: Item): boolean {
  switch (c.kind) {
    case 'and':
      return evaluate(c.a, item) && evaluate(c.b, item);
    case 'or':
      return evaluate(c.a, item) || evaluate(c.b, item);
    case 'not':
      return !evaluate(c.a, item);
    case 'fn': {
      const v = getPath(item, c.path);
      const arg = c.arg ? resolve(c.arg, item) : undefined;
      switch (c.name) {
        case 'attribute_exists':
          return v !== MISSING;
        case 'attribute_not_exists':
          return v === MISSING;
        case 'attribute_type':
          return v !== MISSING && typeOf(v) === arg;
        case 'begins_with':
          return typeof v === 'string' && typeof arg === 'string' && v.startsWith(arg);
        case 'contains':
          if (typeof v === 'string') return typeof arg === 'string' && v.includes(arg);
          if (v instanceof Set || Array.isArray(v)) return [...v].some((x) => equal(x, arg));
          return false;
      }
      throw new ExpressionError(`Invalid function ${c.name}`);
    }
    case 'compare': {
      const a = resolve(c.a, item);
      const b = resolve(c.b, item);
      if (a === MISSING || b === MISSING) return c.op === '<>';
      if (c.op === '=') return equal(a, b);
      if (c.op === '<>') return !equal(a, b);
      const o = order(a, b);
      if (o === undefined) return false;
      return c.op === '<' ? o < 0 : c.op === '<=' ? o <= 0 : c.op === '>' ? o > 0 : o >= 0;
    }
    case 'between': {
      const a = resolve(c.a, item);
      const lo = resolve(c.lo, item);
      const hi = resolve(c.hi, item);
      if (lo !== MISSING && hi !== MISSING && (order(lo, hi) ?? 0) > 0) {
        throw new ExpressionError('Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound');
      }
      if (a === MISSING || lo === MISSING || hi === MISSING) return false;
      const l = order(a, lo);
      const h = order(a, hi);
      return l !== undefined && h !== undefined && l >= 0 && h <= 0;
    }
    case 'in': {
      const a = resolve(c.a, item);
      return a !== MISSING && c.list.some((o) => {
        const v = resolve(o, item);
        return v !== MISSING && equal(a, v);
      });
    }
  }
}

/** Applies update actions to a copy of `item` and returns it. */
export function applyUpdate(u: UpdateActions, item: Item): Item {
  const out = structuredClone(item);
  // Every right-hand side reads the item as it was before the update.
  const sets = u.set.map((s) => {
    const v = resolve(s.value, item);
    if (v === MISSING) throw new ExpressionError('The provided expression refers to an attribute that does not exist in the item');
    return { path: s.path, value: v };
  });
  for (const s of sets) setPath(out, s.path, structuredClone(s.value));
  for (const p of u.remove) removePath(out, p);
  for (const a of u.add) {
    const cur = getPath(out, a.path);
    if (typeof a.value === 'number') {
      if (cur !== MISSING && typeof cur !== 'number') throw new ExpressionError('An operand in the update expression has an incorrect data type');
      setPath(out, a.path, (cur === MISSING ? 0 : cur) + a.value);
    } else if (a.value instanceof Set) {
      if (cur !== MISSING && !(cur instanceof Set)) throw new ExpressionError('An operand in the update expression has an incorrect data type');
      setPath(out, a.path, new Set([...(cur === MISSING ? [] : cur), ...a.value]));
    } else throw new ExpressionError('Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD');
  }
  for (const d of u.delete) {
    const cur = getPath(out, d.path);
    if (!(d.value instanceof Set)) throw new ExpressionError('Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE');
    if (cur instanceof Set) {
      const left = new Set([...cur].filter((x) => ![...(d.value as Set<unknown>)].some((y) => equal(x, y))));
      if (left.size === 0) removePath(out, d.path);
      else setPath(out, d.path, left);
    }
  }
  return out;
}

function setPath(item: Item, path: Path, value: DocValue): void {
  let parent: DocValue = item;
  for (const step of path.slice(0, -1)) {
    const next: DocValue = typeof step === 'number' ? (Array.isArray(parent) ? parent[step] : undefined) : isMap(parent) ? parent[step] : undefined;
    if (next === undefined || (typeof next !== 'object' || next === null)) throw new ExpressionError('The document path provided in the update expression is invalid for update');
    parent = next;
  }
  const last = path[path.length - 1]!;
  if (typeof last === 'number') {
    if (!Array.isArray(parent)) throw new ExpressionError('The document path provided in the update expression is invalid for update');
    if (last >= parent.length) parent.push(value);
    else parent[last] = value;
  } else {
    if (!isMap(parent)) throw new ExpressionError('The document path provided in the update expression is invalid for update');
    parent[last] = value;
  }
}

function removePath(item: Item, path: Path): void {
  let parent: DocValue = item;
  for (const step of path.slice(0, -1)) {
    parent = typeof step === 'number' ? (Array.isArray(parent) ? parent[step] : undefined) : isMap(parent) ? parent[step] : undefined;
    if (parent === undefined) return;
  }
  const last = path[path.length - 1]!;
  if (typeof last === 'number') {
    if (Array.isArray(parent) && last < parent.length) parent.splice(last, 1);
  } else if (isMap(parent)) delete parent[last];
}

/** A copy of `item` with only the projected paths. */
export function project(item: Item, paths: readonly Path[]): Item {
  const out: Item = {};
  for (const p of paths) {
    const v = getPath(item, p);
    if (v === MISSING) continue;
    // Projections the adapters use are top-level or map paths; lists of maps keep their shape.
    let target: Item = out;
    for (const step of p.slice(0, -1)) {
      const key = String(step);
      if (!isMap(target[key])) target[key] = {};
      target = target[key] as Item;
    }
    target[String(p[p.length - 1])] = structuredClone(v);
  }
  return out;
}
