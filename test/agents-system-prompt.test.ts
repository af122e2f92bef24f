import { describe, expect, it } from "vitest";
import { TONES, VERBOSITIES } from "../src/agents/schemas";
import {
  composeSystemPrompt,
  PLATFORM_BASELINE,
  type PromptAgent,
  TONE_LINES,
  VERBOSITY_LINES,
} from "../src/llm/system-prompt";

const bare: PromptAgent = {
  slug: "helper",
  display_name: "Helper",
  instructions: null,
  tone: null,
  verbosity: null,
  cautions: [],
  languages: [],
};
const IDENTITY = "You are Helper (@helper), an AI agent working for the members of this workspace.";
const BASELINE = `${IDENTITY} ${PLATFORM_BASELINE}`;
const paragraphs = (p: string) => p.split("\n\n");

describe("composeSystemPrompt", () => {
  it("is the platform baseline alone when nothing is set", () => {
    expect(composeSystemPrompt(bare)).toBe(BASELINE);
  });

  it("puts the agent's instructions right after the baseline, trimmed; blank instructions count as none", () => {
    expect(
      paragraphs(composeSystemPrompt({ ...bare, instructions: "  Answer billing questions.\nBe kind.  " })),
    ).toEqual([BASELINE, "Answer billing questions.\nBe kind."]);
    expect(composeSystemPrompt({ ...bare, instructions: "   " })).toBe(BASELINE);
  });

  for (const tone of TONES) {
    it(`adds the ${tone} tone line`, () => {
      expect(paragraphs(composeSystemPrompt({ ...bare, tone }))).toEqual([BASELINE, TONE_LINES[tone]]);
    });
  }

  for (const verbosity of VERBOSITIES) {
    it(`adds the ${verbosity} verbosity line`, () => {
      expect(paragraphs(composeSystemPrompt({ ...bare, verbosity }))).toEqual([BASELINE, VERBOSITY_LINES[verbosity]]);
    });
  }

  it("every tone and verbosity line is distinct", () => {
    const lines = [...Object.values(TONE_LINES), ...Object.values(VERBOSITY_LINES)];
    expect(new Set(lines).size).toBe(TONES.length + VERBOSITIES.length);
  });

  it("adds a caution block with one bullet per caution, and none when cautions are empty", () => {
    expect(paragraphs(composeSystemPrompt({ ...bare, cautions: ["legal advice", "pricing promises"] }))).toEqual([
      BASELINE,
      "Avoid the following:\n- legal advice\n- pricing promises",
    ]);
    expect(composeSystemPrompt({ ...bare, cautions: [] })).not.toContain("Avoid");
  });

  it("adds a language line: one language is a pin, more are a default with fallbacks in order; none when empty", () => {
    expect(paragraphs(composeSystemPrompt({ ...bare, languages: ["de-CH"] }))).toEqual([
      BASELINE,
      "Language: reply in de-CH.",
    ]);
    expect(paragraphs(composeSystemPrompt({ ...bare, languages: ["fr", "en", "de"] }))).toEqual([
      BASELINE,
      "Language: reply in fr by default; when the user cannot use it or asks for another, fall back to en, then de.",
    ]);
    expect(composeSystemPrompt({ ...bare, languages: [] })).not.toContain("Language:");
  });

  it("orders every part: baseline, instructions, tone, verbosity, cautions, languages, then surface sections", () => {
    const prompt = composeSystemPrompt(
      {
        slug: "sales",
        display_name: "Sales Desk",
        instructions: "Qualify leads.",
        tone: "direct",
        verbosity: "concise",
        cautions: ["discounts"],
        languages: ["en-GB", "fr"],
      },
      {
        workspaceName: "Acme",
        today: "2026-11-22",
        sections: ["Browser rules: read before you click.", "  ", "Second section."],
      },
    );
    expect(prompt).toBe(
      [
        `You are Sales Desk (@sales), an AI agent working for the members of the workspace "Acme". ${PLATFORM_BASELINE} Today is 2026-11-22.`,
        "Qualify leads.",
        TONE_LINES.direct,
        VERBOSITY_LINES.concise,
        "Avoid the following:\n- discounts",
        "Language: reply in en-GB by default; when the user cannot use it or asks for another, fall back to fr.",
        "Browser rules: read before you click.",
        "Second section.",
      ].join("\n\n"),
    );
  });

  it("names the workspace and today's date in the baseline only when the context gives them", () => {
    expect(composeSystemPrompt(bare, { workspaceName: "Acme" })).toBe(
      `You are Helper (@helper), an AI agent working for the members of the workspace "Acme". ${PLATFORM_BASELINE}`,
    );
    expect(composeSystemPrompt(bare, { today: "2026-01-02" })).toBe(`${BASELINE} Today is 2026-01-02.`);
    expect(composeSystemPrompt(bare, {})).toBe(BASELINE);
  });

  it("accepts a whole AgentRow", () => {
    const row = {
      ...bare,
      id: "0190f5e2-7c1a-7000-8000-000000000000",
      aliases: [],
      runtime_profile: "standard",
      delivery_mode: "chat",
      status: "enabled" as const,
      is_default: true,
      instructions_is_default: true,
      created_at: "2026-11-22T00:00:00.000Z",
    };
    expect(composeSystemPrompt(row)).toBe(BASELINE);
  });
});
