/**
 * An agent's `approval_required` entries: tool names, where `*` at the end of a `__`-separated
 * segment is a wildcard (`mcp__*`, `mcp__billing__*`, `mcp__*__delete_*`).
 */
export function isToolPattern(entry: string): boolean {
  if (!/^[A-Za-z0-9_*-]+$/.test(entry)) return false;
  return entry.split("__").every((segment) => segment !== "" && !segment.slice(0, -1).includes("*"));
}

/** `*` ending the last segment matches the rest of the name; ending another, the rest of that segment only. */
function patternRegex(pattern: string): RegExp {
  const segments = pattern.split("__").map((segment, i, all) => {
    const literal = segment.replace(/\*$/, "").replace(/[-]/g, "\\-");
    if (!segment.endsWith("*")) return literal;
    return literal + (i === all.length - 1 ? ".*" : "(?:(?!__).)*");
  });
  return new RegExp(`^${segments.join("__")}$`);
}

/** Whether a tool's calls wait for approval under the agent's list. */
export function requiresApproval(patterns: readonly string[], toolName: string): boolean {
  return patterns.some((p) => (p.includes("*") ? patternRegex(p).test(toolName) : p === toolName));
}
