/**
 * An object seen through a few replaced members: the named members are the given ones,
 * every other member is the target's own (methods bound to it, so `this` stays right).
 * The one shape behind the project's wrappers of a dependency (a hedged frame store, a
 * processor behind the crash probe or a test seam, a gated client), instead of a Proxy
 * written out in each.
 */
export function overriding<T extends object>(target: T, overrides: { readonly [K in keyof T]?: T[K] }): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.prototype.hasOwnProperty.call(overrides, prop)) return (overrides as Record<PropertyKey, unknown>)[prop];
      const value = Reflect.get(t, prop, t) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}
