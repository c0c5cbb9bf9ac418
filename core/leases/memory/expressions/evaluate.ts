/**
 * The evaluator of parsed expressions (parse.ts) over plain document-client values
 * (string, number, boolean, null, Uint8Array, arrays, Sets, maps) for the in-memory table
 * twin: conditions, update actions and projections, with DynamoDB's documented semantics
 * (parse.ts says which).
 */
import { ExpressionError, type Condition, type DocValue, type Item, type Operand, type Path, type UpdateActions } from './parse.ts';

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
