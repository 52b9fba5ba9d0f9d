// Twenty questions as in LMRL Gym (Abdulhai et al. 2023) and ArCHer: find the hidden object
// by asking yes/no questions, then guess it. LMRL Gym answers with an LLM oracle; here the
// oracle is a feature table, so answers are exact and the episode is deterministic. Each
// episode draws a candidate set (objects with distinct answers to every question, so the
// object can always be pinned down) and a secret object from the seed.
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { extractAction, normalizeAction, parseCommand, trimTrailing } from "./parse-action";
import { createRng, mixSeed } from "./rng";
import type { EnvSpec, EnvView } from "./types";

export const twentyQConfigSchema = z.strictObject({
  numCandidates: z.number().int().min(2).max(40).default(16).describe("How many objects the secret is drawn from (listed to the agent)."),
  maxTurns: z.number().int().min(1).max(100).default(20).describe("Questions and guesses before truncation (twenty questions: 20)."),
});
export type TwentyQConfig = z.infer<typeof twentyQConfigSchema>;

/** The yes/no questions the oracle can answer: feature id, canonical question, other spellings. */
export const TWENTYQ_QUESTIONS: { id: string; question: string; aliases: string[] }[] = [
  { id: "alive", question: "Is it alive?", aliases: ["is it living", "is it a living thing", "is it living thing"] },
  { id: "animal", question: "Is it an animal?", aliases: ["is it animal"] },
  { id: "mammal", question: "Is it a mammal?", aliases: ["is it mammal"] },
  { id: "plant", question: "Is it a plant?", aliases: ["is it plant"] },
  { id: "edible", question: "Can you eat it?", aliases: ["is it edible", "is it food", "can it be eaten", "can i eat it"] },
  { id: "big", question: "Is it bigger than a breadbox?", aliases: ["is it big", "is it large", "is it bigger than breadbox"] },
  { id: "metal", question: "Is it made of metal?", aliases: ["is it metal", "is it metallic", "is it made from metal"] },
  { id: "wood", question: "Is it made of wood?", aliases: ["is it wooden", "is it wood", "is it made from wood"] },
  { id: "legs", question: "Does it have legs?", aliases: ["has it got legs", "does it have any legs"] },
  { id: "fly", question: "Can it fly?", aliases: ["does it fly"] },
  { id: "water", question: "Is it found in water?", aliases: ["does it live in water", "is it in water", "is it found in the water"] },
  { id: "kitchen", question: "Is it used in the kitchen?", aliases: ["is it found in the kitchen", "is it a kitchen item", "is it used in kitchen"] },
  { id: "electric", question: "Does it use electricity?", aliases: ["is it electronic", "is it electric", "does it need electricity"] },
  { id: "vehicle", question: "Is it a vehicle?", aliases: ["is it vehicle", "can you ride it"] },
  { id: "tool", question: "Is it a tool?", aliases: ["is it tool"] },
  { id: "outdoors", question: "Is it usually found outdoors?", aliases: ["is it found outdoors", "is it outdoors", "is it found outside", "is it outside"] },
  { id: "soft", question: "Is it soft?", aliases: [] },
  { id: "round", question: "Is it round?", aliases: ["is it round shaped", "is it spherical"] },
  { id: "music", question: "Is it used to make music?", aliases: ["is it a musical instrument", "is it an instrument", "is it musical instrument"] },
  { id: "furniture", question: "Is it furniture?", aliases: ["is it a piece of furniture", "is it a furniture"] },
];

/** The object table: name -> the features answered "yes" (every other question is "no"). */
const OBJECTS: Record<string, string> = {
  dog: "alive animal mammal legs outdoors soft",
  cat: "alive animal mammal legs soft",
  horse: "alive animal mammal legs big outdoors",
  elephant: "alive animal mammal legs big outdoors",
  whale: "alive animal mammal big water",
  mouse: "alive animal mammal legs",
  eagle: "alive animal legs fly outdoors",
  penguin: "alive animal legs water outdoors",
  duck: "alive animal legs fly water outdoors",
  shark: "alive animal big water",
  goldfish: "alive animal water",
  frog: "alive animal legs water outdoors",
  snake: "alive animal outdoors",
  butterfly: "alive animal legs fly outdoors",
  "oak tree": "alive plant big wood outdoors",
  rose: "alive plant outdoors",
  cactus: "alive plant",
  "water lily": "alive plant water outdoors",
  apple: "edible round",
  banana: "edible",
  bread: "edible kitchen soft",
  egg: "edible kitchen round",
  watermelon: "edible round big",
  pizza: "edible round kitchen soft",
  hammer: "tool metal wood",
  screwdriver: "tool metal",
  shovel: "tool metal wood outdoors",
  chainsaw: "tool metal electric outdoors",
  spoon: "kitchen metal",
  "frying pan": "kitchen metal round",
  kettle: "kitchen metal electric",
  refrigerator: "kitchen metal electric big",
  "cutting board": "kitchen wood",
  laptop: "electric",
  television: "electric big",
  bicycle: "vehicle metal outdoors",
  car: "vehicle metal big outdoors",
  airplane: "vehicle metal big fly outdoors",
  sailboat: "vehicle wood big water outdoors",
  "electric scooter": "vehicle metal electric outdoors",
  skateboard: "vehicle wood outdoors",
  chair: "furniture wood legs",
  table: "furniture wood legs big",
  sofa: "furniture big soft legs",
  bookshelf: "furniture wood big",
  guitar: "music wood",
  piano: "music wood big legs",
  drum: "music round",
  trumpet: "music metal",
  "electric keyboard": "music electric",
  pillow: "soft",
  coin: "metal round",
  ball: "round soft outdoors",
  "teddy bear": "soft legs",
  key: "metal",
  book: "",
};

export const TWENTYQ_OBJECTS = Object.keys(OBJECTS);
const FEATURES = new Map(Object.entries(OBJECTS).map(([name, f]) => [name, new Set(f.split(" ").filter(Boolean))]));

export function twentyQAnswer(object: string, featureId: string): boolean {
  return FEATURES.get(object)?.has(featureId) ?? false;
}

function article(name: string): string {
  return /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

export interface TwentyQState {
  candidates: string[];
  secret: string;
  /** Feature id -> answer, in asking order (repeats are not stored twice). */
  asked: [string, boolean][];
  wrongGuesses: string[];
}

export class TwentyQEnv extends BaseEnv {
  readonly id = "twentyq";
  private candidates: string[] = [];
  private secret = "";
  private asked = new Map<string, boolean>();
  private wrongGuesses = new Set<string>();

  constructor(readonly config: TwentyQConfig) {
    super(config.maxTurns);
  }

  get state(): TwentyQState {
    return { candidates: this.candidates.slice(), secret: this.secret, asked: [...this.asked], wrongGuesses: [...this.wrongGuesses] };
  }

  protected onReset(seed: number): string {
    const rng = createRng(mixSeed("twentyq", seed));
    // Greedy draw of objects whose answer vectors all differ: then some sequence of
    // questions always isolates the secret.
    const chosen: string[] = [];
    const signatures = new Set<string>();
    for (const name of rng.shuffle(TWENTYQ_OBJECTS)) {
      const sig = TWENTYQ_QUESTIONS.map((q) => (twentyQAnswer(name, q.id) ? 1 : 0)).join("");
      if (signatures.has(sig)) continue;
      signatures.add(sig);
      chosen.push(name);
      if (chosen.length === this.config.numCandidates) break;
    }
    this.candidates = chosen.sort();
    this.secret = rng.pick(this.candidates);
    this.asked = new Map();
    this.wrongGuesses = new Set();
    return `I am thinking of one of these objects: ${this.candidates.join(", ")}.\nAsk yes/no questions to find it, then guess it.`;
  }

  protected onStep(actionText: string): TurnOutcome {
    const parsed = this.parse(actionText);
    if (parsed === null) {
      return {
        observation: "I can't answer that. Ask one of the yes/no questions or guess an object from the list.",
        reward: 0,
        done: false,
        info: invalidInfo(),
      };
    }
    if (parsed.kind === "question") {
      const q = TWENTYQ_QUESTIONS.find((x) => x.id === parsed.id)!;
      const yes = twentyQAnswer(this.secret, q.id);
      if (!this.asked.has(q.id)) this.asked.set(q.id, yes);
      return { observation: yes ? "Yes." : "No.", reward: 0, done: false, info: { valid: true, success: false, action: q.question, kind: "question" } };
    }
    if (!this.candidates.includes(parsed.name)) {
      return {
        observation: `${capitalize(article(parsed.name))} is not one of the objects. The objects are: ${this.candidates.join(", ")}.`,
        reward: 0,
        done: false,
        info: invalidInfo(guessText(parsed.name), "not a candidate object"),
      };
    }
    const success = parsed.name === this.secret;
    if (!success) this.wrongGuesses.add(parsed.name);
    return {
      observation: success ? `Yes! It is ${article(this.secret)}.` : `No, it is not ${article(parsed.name)}.`,
      reward: success ? 1 : 0,
      done: success,
      info: { valid: true, success, action: guessText(parsed.name), kind: "guess" },
    };
  }

  /** A question (matched to a feature) or a guess (an object name, candidate or not); null if neither. */
  private parse(actionText: string): { kind: "question"; id: string } | { kind: "guess"; name: string } | null {
    const cmd = parseCommand(actionText, ["guess", "ask", "question"]);
    let text = trimTrailing(normalizeAction(cmd ? cmd.arg : extractAction(actionText)), "?.! ");
    if (cmd?.verb !== "guess") {
      const said = normalizeQuestion(text);
      const q = TWENTYQ_QUESTIONS.find((x) => normalizeQuestion(x.question) === said || x.aliases.some((a) => normalizeQuestion(a) === said));
      if (q) return { kind: "question", id: q.id };
    }
    // Guesses: "is it a dog", "my guess is a dog", "it is a dog", "dog".
    text = text
      .replace(/^(is it|it is|it's|my guess is|the answer is|i guess|answer:)\s+/, "")
      .replace(/^(a|an|the)\s+/, "")
      .trim();
    if (FEATURES.has(text)) return { kind: "guess", name: text };
    return cmd?.verb === "guess" && text ? { kind: "guess", name: text.slice(0, 60) } : null;
  }

  admissibleActions(): string[] {
    return [...TWENTYQ_QUESTIONS.map((q) => q.question), ...this.candidates.map(guessText)];
  }

  goldAnswer(): string {
    return this.secret;
  }

  instructions(): string {
    return [
      "Let's play twenty questions. I am thinking of one object from a list I will give you.",
      "Ask one yes/no question per turn, e.g. <action>Is it alive?</action>, or guess, e.g. <action>Is it a dog?</action>.",
      `Questions I can answer: ${TWENTYQ_QUESTIONS.map((q) => q.question).join(" ")}`,
      "Reward: 1 when you guess the object; the game ends then.",
    ].join("\n");
  }

  view(): EnvView {
    const consistent = this.candidates.filter((c) => [...this.asked].every(([id, yes]) => twentyQAnswer(c, id) === yes) && !this.wrongGuesses.has(c));
    return {
      kind: "fields",
      fields: {
        secret: this.secret,
        "questions asked": this.asked.size,
        "wrong guesses": [...this.wrongGuesses].join(", ") || null,
        "consistent candidates": consistent.join(", "),
      },
    };
  }

  /** The secret and the candidate set. */
  protected instanceState(): AnchorValue {
    return { secret: this.secret, candidates: this.candidates.slice().sort() };
  }

  protected anchorState(): AnchorValue {
    // What the agent knows: the answers it got and the guesses ruled out, order-free.
    return {
      asked: [...this.asked].map(([id, yes]) => `${id}=${yes ? "yes" : "no"}`).sort(),
      wrong: [...this.wrongGuesses].sort(),
    };
  }
}

function guessText(name: string): string {
  return `Is it ${article(name)}?`;
}

function normalizeQuestion(q: string): string {
  return q.toLowerCase().replace(/[?.!]/g, "").replace(/\s+/g, " ").trim();
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export const twentyQSpec: EnvSpec<TwentyQConfig> = {
  id: "twentyq",
  title: "Twenty questions",
  description:
    "Find the hidden object among a listed set by asking yes/no questions, then guess (LMRL Gym / ArCHer). The oracle is a feature table, so answers are exact. Reward 1 for the right guess.",
  configSchema: twentyQConfigSchema,
  create: (config) => new TwentyQEnv(config),
};
