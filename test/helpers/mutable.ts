/** A deep mutable copy type of readonly props, for tests that break one field at a time. */
export type Mutable<T> = T extends (infer U)[] ? Mutable<U>[] : T extends object ? { -readonly [K in keyof T]: Mutable<T[K]> } : T;

/** A deep copy of `base`, changed by `fn`. */
export function mutated<T>(base: T, fn: (p: Mutable<T>) => void): Mutable<T> {
  const p = structuredClone(base) as Mutable<T>;
  fn(p);
  return p;
}
