import { auditAlone } from "../audit/events";
import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { languageModel } from "../llm/model";
import { readBusinessProfile } from "../profile/service";
import { agentEvent, configured, idErrors, params, pathAgent, TAGS } from "./route-parts";
import { SuggestInstructionsResponseSchema } from "./schemas";
import { enabledSkillNames, getSubset } from "./subsets";
import { draftInstructions } from "./suggest";

const route = routesOf(TAGS);

route("admin", "POST /v1/agents/{id}/suggest-instructions", "Draft instructions for an agent", {
  description:
    "Drafts a tailored system prompt from the business profile (when there is one), the agent's role, description and settings, and its skills. The model never sees members, conversations, credentials or other agents; credentials and contact details are scrubbed from free text. The draft is returned for review and not saved. No request body.",
  request: params,
  responses: {
    200: [SuggestInstructionsResponseSchema, "The draft"],
    ...idErrors,
    500: "The feature is disabled because no language-model provider is configured (`model_not_configured`), or the model failed (`suggestion_failed`)",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const caller = c.var.caller;
  const agent = await pathAgent(c, id);
  const noModel = "Instruction suggestions are disabled: no language-model provider is configured";
  const model = configured(languageModel(c.env), "model_not_configured", noModel);
  const [profile, enabled] = await Promise.all([
    readBusinessProfile(c.env, caller.workspace.id),
    getSubset(c.env, caller.workspace.id, id, "skills"),
  ]);
  const skills = await enabledSkillNames(c.env, caller.workspace.id, enabled);
  const draft = await draftInstructions(model, { agent, workspaceName: caller.workspace.name, profile, skills });
  const details = { profile_used: profile !== null, draft_length: draft.length };
  await auditAlone(c.env, callerEvent(c, agentEvent("agent.suggest", id, details, "suggest_instructions")));
  return c.json({ draft }, 200);
});

/** Drafting an agent's instructions with the language model. */
export const suggestRouter = route.router;
