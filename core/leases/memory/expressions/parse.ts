/**
 * DynamoDB's expression languages (condition, update, key condition, projection) for the
 * in-memory table twin, parsed: a tokenizer and a parser to a small tree. The evaluator
 * over plain document-client values is evaluate.ts.
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

export type Operand =
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
