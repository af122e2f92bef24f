/**
 * robots.txt as RFC 9309 reads it, through `robots-parser`: the group naming our product token
 * (else the `*` group), its `allow`/`disallow` rules with `*` and `$`, the longest match winning
 * and `allow` winning a tie.
 */
import robotsParser from "robots-parser";

/** The product token of our User-Agent (`WorkspaceAgentService/1.0 (+…)`). */
export const ROBOTS_TOKEN = "workspaceagentservice";

/**
 * The library only answers for URLs of the origin the file was read from; callers hand us paths
 * of the crawled site, so every file is read for this one stand-in origin.
 */
const ORIGIN = "https://robots.invalid";

export type Robots = { allows(pathAndQuery: string): boolean };

export function parseRobots(text: string, token = ROBOTS_TOKEN): Robots {
  const robots = robotsParser(`${ORIGIN}/robots.txt`, text);
  return { allows: (pathAndQuery) => robots.isAllowed(`${ORIGIN}${pathAndQuery}`, token) === true };
}

export const ALLOW_ALL: Robots = parseRobots("");
export const DISALLOW_ALL: Robots = parseRobots("User-agent: *\nDisallow: /\n");

/** Whether the path (with its query) may be fetched. */
export function robotsAllow(robots: Robots, pathAndQuery: string): boolean {
  return robots.allows(pathAndQuery);
}
