/**
 * An object whose members are built when first read, each once: for sets of things costly to
 * build (schemas, prepared statements) of which one use needs only a few.
 */
export function builtOnFirstUse<T extends Record<string, () => unknown>>(
  builders: T,
): { readonly [K in keyof T]: ReturnType<T[K]> } {
  const built = {} as { [K in keyof T]: ReturnType<T[K]> };
  for (const [key, build] of Object.entries(builders)) {
    Object.defineProperty(built, key, {
      enumerable: true,
      configurable: true,
      get: () => {
        const value = build();
        Object.defineProperty(built, key, { value, enumerable: true });
        return value;
      },
    });
  }
  return built;
}
