/**
 * robots.txt as RFC 9309 reads it: the group naming our product token (else the `*` group),
 * its `allow`/`disallow` rules with `*` and `$`, the longest match winning and `allow` winning
 * a tie.
 */

/** The product token of our User-Agent (`WorkspaceAgentService/1.0 (+…)`). */
export const ROBOTS_TOKEN = "workspaceagentservice";

type Rule = { allow: boolean; pattern: string; regex: RegExp };

export type Robots = { rules: readonly Rule[] };

export const ALLOW_ALL: Robots = { rules: [] };
export const DISALLOW_ALL: Robots = { rules: [rule(false, "/")] };

function rule(allow: boolean, pattern: string): Rule {
  const anchored = pattern.endsWith("$");
  const body = (anchored ? pattern.slice(0, -1) : pattern)
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return { allow, pattern, regex: new RegExp(`^${body}${anchored ? "$" : ""}`) };
}

export function parseRobots(text: string, token = ROBOTS_TOKEN): Robots {
  type Group = { agents: string[]; rules: Rule[] };
  const groups: Group[] = [];
  let current: Group | null = null;
  let lastWasAgent = false;
  for (const rawLine of text.split(/\r\n|\r|\n/)) {
    const line = rawLine.replace(/#.*/, "").trim();
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === "user-agent") {
      if (!current || !lastWasAgent) {
        current = { agents: [], rules: [] };
        groups.push(current);
      }
      current.agents.push(value.toLowerCase());
      lastWasAgent = true;
      continue;
    }
    lastWasAgent = false;
    if (!current || (key !== "allow" && key !== "disallow")) continue;
    if (value === "") continue; // an empty disallow allows everything
    current.rules.push(rule(key === "allow", value));
  }
  const ours = groups.filter((g) => g.agents.some((a) => a.split("/")[0] === token));
  const chosen = ours.length ? ours : groups.filter((g) => g.agents.includes("*"));
  return { rules: chosen.flatMap((g) => g.rules) };
}

/** Whether the path (with its query) may be fetched. */
export function robotsAllow(robots: Robots, pathAndQuery: string): boolean {
  let best: Rule | null = null;
  for (const r of robots.rules) {
    if (!r.regex.test(pathAndQuery)) continue;
    if (
      !best ||
      r.pattern.length > best.pattern.length ||
      (r.pattern.length === best.pattern.length && r.allow && !best.allow)
    )
      best = r;
  }
  return best ? best.allow : true;
}
