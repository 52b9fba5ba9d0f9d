// An online shop in the style of WebShop (Yao et al. 2022): find and buy the product an
// instruction asks for. The agent searches (`search[query]`), pages through results, opens
// a product, picks its options and buys (`click[...]`). The reward is WebShop's matching
// score: the share of requested attributes, options and the price bound the purchase
// meets, times a product-type factor. The catalogue is generated once per catalogSeed (as
// WebShop has one catalogue); the reset seed picks the instruction.
import { z } from "zod";
import type { AnchorValue } from "../credit/types";
import { BaseEnv, invalidInfo, type TurnOutcome } from "./base-env";
import { matchAction, parseCommand } from "./parse-action";
import { createRng, mixSeed, type Rng } from "./rng";
import { Bm25Index, tokenize } from "./text-search";
import type { EnvSpec, EnvView } from "./types";

export const shopConfigSchema = z.strictObject({
  numProducts: z.number().int().min(20).max(2000).default(200).describe("Products in the generated catalogue."),
  catalogSeed: z.number().int().default(0).describe("Seed of the catalogue (fixed across episodes, like WebShop's product database)."),
  resultsPerPage: z.number().int().min(1).max(20).default(10).describe("Search results per page (WebShop shows 10)."),
  maxTurns: z.number().int().min(1).max(200).default(15).describe("Turns before the episode is truncated (GiGPO uses 15 for WebShop)."),
});
export type ShopConfig = z.infer<typeof shopConfigSchema>;

// ---------------------------------------------------------------------------------------
// Catalogue.

interface Category {
  dept: string;
  type: string;
  attributes: string[];
  options: Record<string, string[]>;
  price: [number, number];
}

const CATEGORIES: Category[] = [
  {
    dept: "fashion",
    type: "running shoes",
    attributes: ["water resistant", "lightweight", "non slip", "breathable", "memory foam"],
    options: { size: ["7", "8", "9", "10", "11"], color: ["black", "white", "navy", "red", "grey"] },
    price: [30, 140],
  },
  {
    dept: "fashion",
    type: "t-shirt",
    attributes: ["cotton", "machine washable", "slim fit", "short sleeve", "moisture wicking"],
    options: { size: ["small", "medium", "large", "x-large"], color: ["black", "white", "blue", "green", "heather grey"] },
    price: [8, 40],
  },
  {
    dept: "fashion",
    type: "hoodie",
    attributes: ["fleece lined", "machine washable", "zip up", "relaxed fit", "cotton"],
    options: { size: ["small", "medium", "large", "x-large"], color: ["black", "charcoal", "navy", "burgundy", "olive"] },
    price: [20, 80],
  },
  {
    dept: "electronics",
    type: "wireless earbuds",
    attributes: ["noise cancelling", "water resistant", "long battery life", "fast charging", "bluetooth 5.3"],
    options: { color: ["black", "white", "blue", "rose gold"] },
    price: [15, 200],
  },
  {
    dept: "electronics",
    type: "phone case",
    attributes: ["shockproof", "slim", "wireless charging compatible", "clear", "kickstand"],
    options: { model: ["iphone 14", "iphone 15", "galaxy s23", "pixel 8"], color: ["black", "clear", "purple", "green"] },
    price: [6, 40],
  },
  {
    dept: "electronics",
    type: "usb c charger",
    attributes: ["fast charging", "foldable plug", "dual port", "compact", "gan"],
    options: { power: ["20w", "30w", "65w", "100w"], color: ["black", "white"] },
    price: [10, 60],
  },
  {
    dept: "grocery",
    type: "coffee beans",
    attributes: ["organic", "fair trade", "dark roast", "decaf", "single origin"],
    options: { size: ["12 ounce", "2 pound", "5 pound"], grind: ["whole bean", "ground"] },
    price: [8, 60],
  },
  {
    dept: "grocery",
    type: "protein bars",
    attributes: ["gluten free", "low sugar", "high protein", "vegan", "keto friendly"],
    options: { flavor: ["chocolate", "peanut butter", "vanilla", "berry"], count: ["6 count", "12 count", "24 count"] },
    price: [10, 45],
  },
  {
    dept: "grocery",
    type: "green tea",
    attributes: ["organic", "caffeine free", "non gmo", "loose leaf", "individually wrapped"],
    options: { flavor: ["jasmine", "mint", "lemon", "original"], count: ["20 bags", "50 bags", "100 bags"] },
    price: [5, 30],
  },
  {
    dept: "beauty",
    type: "shampoo",
    attributes: ["sulfate free", "paraben free", "for dry hair", "cruelty free", "natural ingredients"],
    options: { size: ["8 fl oz", "16 fl oz", "32 fl oz"], scent: ["coconut", "lavender", "unscented", "tea tree"] },
    price: [6, 40],
  },
  {
    dept: "beauty",
    type: "face moisturizer",
    attributes: ["fragrance free", "for sensitive skin", "spf 30", "hyaluronic acid", "non comedogenic"],
    options: { size: ["1.7 oz", "3.4 oz"] },
    price: [9, 70],
  },
  {
    dept: "home",
    type: "throw pillow covers",
    attributes: ["machine washable", "super soft", "hidden zipper", "velvet", "set of 2"],
    options: { size: ["18x18 inch", "20x20 inch", "24x24 inch"], color: ["beige", "navy", "mustard", "sage green"] },
    price: [10, 35],
  },
  {
    dept: "home",
    type: "desk lamp",
    attributes: ["dimmable", "usb charging port", "eye caring", "touch control", "adjustable arm"],
    options: { color: ["black", "white", "silver"] },
    price: [15, 70],
  },
  {
    dept: "home",
    type: "bath towels",
    attributes: ["cotton", "quick dry", "highly absorbent", "oversized", "machine washable"],
    options: { color: ["white", "grey", "navy", "aqua"], count: ["2 pack", "4 pack", "6 pack"] },
    price: [15, 60],
  },
];

const BRANDS = [
  "Acme",
  "Nordvik",
  "Sunpeak",
  "Bluefin",
  "Orbit",
  "Maple & Co",
  "Vantor",
  "Lumio",
  "Kestrel",
  "Pinegrove",
  "Zentra",
  "Halcyon",
  "Rivet",
  "Quill",
  "Tidewell",
  "Ember",
];

export interface Product {
  id: string;
  title: string;
  category: number;
  attributes: string[];
  options: Record<string, string[]>;
  price: number;
  rating: number;
  description: string;
}

export interface ShopGoal {
  productId: string;
  category: number;
  attributes: string[];
  options: Record<string, string>;
  priceUpper: number;
  instruction: string;
}

/** A deterministic catalogue; the same (numProducts, catalogSeed) gives the same products. */
export function generateCatalogue(numProducts: number, catalogSeed: number): Product[] {
  const rng = createRng(mixSeed("shop-catalogue", catalogSeed));
  const ids = new Set<string>();
  const products: Product[] = [];
  for (let i = 0; i < numProducts; i++) {
    const category = i % CATEGORIES.length; // every category is stocked evenly
    const cat = CATEGORIES[category];
    let id: string;
    do id = "B0" + Array.from({ length: 8 }, () => "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"[rng.int(34)]).join("");
    while (ids.has(id));
    ids.add(id);
    const attributes = rng.sample(cat.attributes, rng.range(2, 3)).sort();
    const options: Record<string, string[]> = {};
    for (const [dim, values] of Object.entries(cat.options)) {
      const keep = new Set(rng.sample(values, rng.range(Math.min(2, values.length), values.length)));
      options[dim] = values.filter((v) => keep.has(v)); // catalogue order, like a product page
    }
    const brand = rng.pick(BRANDS);
    const shown = rng.sample(attributes, rng.range(1, 2));
    const title = `${brand} ${shown.map(titleCase).join(" ")} ${titleCase(cat.type)}`;
    const price = Math.round((cat.price[0] + rng.next() * (cat.price[1] - cat.price[0])) * 100) / 100;
    const rating = Math.round((3 + rng.next() * 2) * 10) / 10;
    const description = `${title}. ${attributes.map((a) => capitalize(a)).join(". ")}. Available in ${Object.entries(options)
      .map(([d, vs]) => `${d} ${vs.join(", ")}`)
      .join("; ")}.`;
    products.push({ id, title, category, attributes, options, price, rating, description });
  }
  return products;
}

// ---------------------------------------------------------------------------------------
// Pages.

type Page =
  | { kind: "search" }
  | { kind: "results"; query: string; page: number }
  | { kind: "item"; productId: string; query: string; page: number }
  | { kind: "detail"; productId: string; query: string; page: number; section: "description" | "features" };

export interface ShopState {
  goal: ShopGoal;
  page: Page;
  /** Options chosen on the current product page. */
  selected: Record<string, string>;
}

const MAX_RESULTS = 50; // WebShop returns at most 50 results (5 pages of 10)

export class ShopEnv extends BaseEnv {
  readonly id = "shop";
  readonly catalogue: Product[];
  private readonly byId: Map<string, Product>;
  private readonly index: Bm25Index;
  private goal!: ShopGoal;
  private page: Page = { kind: "search" };
  private selected: Record<string, string> = {};
  private resultCache = new Map<string, string[]>();

  constructor(readonly config: ShopConfig) {
    super(config.maxTurns);
    this.catalogue = generateCatalogue(config.numProducts, config.catalogSeed);
    this.byId = new Map(this.catalogue.map((p) => [p.id, p]));
    this.index = new Bm25Index(
      this.catalogue.map((p) => `${p.title} ${CATEGORIES[p.category].type} ${p.attributes.join(" ")} ${Object.values(p.options).flat().join(" ")}`),
    );
  }

  get state(): ShopState {
    return { goal: structuredClone(this.goal), page: { ...this.page }, selected: { ...this.selected } };
  }

  protected onReset(seed: number): string {
    this.goal = makeGoal(this.catalogue, createRng(mixSeed("shop-goal", seed)));
    this.page = { kind: "search" };
    this.selected = {};
    return this.render();
  }

  /** Product ids matching a query, best first (BM25 over title, type, attributes, options). */
  search(query: string): string[] {
    // Pages re-render the same query every turn: cache by the query text.
    let hits = this.resultCache.get(query);
    if (!hits) {
      hits = this.index.search(query, MAX_RESULTS).map((i) => this.catalogue[i].id);
      if (this.resultCache.size > 2000) this.resultCache.clear();
      this.resultCache.set(query, hits);
    }
    return hits;
  }

  protected onStep(actionText: string): TurnOutcome {
    const page = this.page;
    if (page.kind === "search") {
      const cmd = parseCommand(actionText, ["search"]);
      const query = cmd?.arg.replace(/\s+/g, " ").trim().slice(0, 200) ?? "";
      if (!cmd || tokenize(query).length === 0) return this.invalid("On the search page, use search[your query].");
      this.page = { kind: "results", query, page: 1 };
      return this.ok(`search[${query}]`);
    }
    const clicks = this.clickables();
    const cmd = parseCommand(actionText, ["click"]);
    const target = cmd ? matchAction(cmd.arg, clicks) : matchAction(actionText, clicks);
    if (target === null) return this.invalid(`You can click: ${clicks.map((c) => `[${c}]`).join(" ")}`);
    const action = `click[${target}]`;
    const t = target.toLowerCase();
    if (t === "back to search") {
      this.page = { kind: "search" };
      this.selected = {};
    } else if (t === "next >" && page.kind === "results") this.page = { ...page, page: page.page + 1 };
    else if (t === "< prev") {
      if (page.kind === "results") this.page = { ...page, page: page.page - 1 };
      else if (page.kind === "item") this.page = { kind: "results", query: page.query, page: page.page };
      else if (page.kind === "detail") this.page = { kind: "item", productId: page.productId, query: page.query, page: page.page };
    } else if (page.kind === "results") {
      this.page = { kind: "item", productId: target, query: page.query, page: page.page };
      this.selected = {};
    } else if (page.kind === "item") {
      if (t === "buy now") return this.buy(action);
      if (t === "description" || t === "features") this.page = { ...page, kind: "detail", section: t };
      else {
        const product = this.byId.get(page.productId)!;
        const dim = Object.keys(product.options).find((d) => product.options[d].includes(target))!;
        this.selected = { ...this.selected, [dim]: target };
      }
    }
    return this.ok(action);
  }

  private ok(action: string): TurnOutcome {
    return { observation: this.render(), reward: 0, done: false, info: { valid: true, success: false, action, page: this.page.kind } };
  }

  private invalid(hint: string): TurnOutcome {
    return { observation: `Invalid action. ${hint}\n\n${this.render()}`, reward: 0, done: false, info: invalidInfo() };
  }

  private buy(action: string): TurnOutcome {
    const page = this.page as Extract<Page, { kind: "item" }>;
    const product = this.byId.get(page.productId)!;
    const score = shopReward(this.goal, product, this.selected);
    const success = score.reward === 1;
    return {
      observation: `Thank you for shopping with us! You bought ${product.title} for $${product.price.toFixed(2)}.\nYour score (min 0.0, max 1.0): ${score.reward.toFixed(2)}`,
      reward: score.reward,
      done: true,
      info: { valid: true, success, action, productId: product.id, ...score.parts },
    };
  }

  /** The click targets of the current page (canonical spellings); empty on the search page. */
  clickables(): string[] {
    const page = this.page;
    switch (page.kind) {
      case "search":
        return [];
      case "results": {
        const hits = this.search(page.query);
        const shown = hits.slice((page.page - 1) * this.config.resultsPerPage, page.page * this.config.resultsPerPage);
        const out = ["back to search"];
        if (page.page > 1) out.push("< prev");
        if (page.page * this.config.resultsPerPage < hits.length) out.push("next >");
        return [...out, ...shown];
      }
      case "item": {
        const product = this.byId.get(page.productId)!;
        return ["back to search", "< prev", ...Object.values(product.options).flat(), "description", "features", "buy now"];
      }
      case "detail":
        return ["back to search", "< prev"];
    }
  }

  admissibleActions(): string[] | null {
    // The search page takes free text: open action space there (sampleActions gives candidates).
    if (this.page.kind === "search") return null;
    return this.clickables().map((c) => `click[${c}]`);
  }

  /**
   * Candidates for the random baseline. On the search page: the instruction itself, the
   * product type, one requested attribute with the type, and another category's type
   * (a wrong search). Elsewhere: the page's clickables.
   */
  sampleActions(): string[] {
    if (this.page.kind !== "search") return this.admissibleActions() ?? [];
    const type = CATEGORIES[this.goal.category].type;
    const other = CATEGORIES[(this.goal.category + 1 + (hashText(this.goal.productId) % (CATEGORIES.length - 1))) % CATEGORIES.length].type;
    return [
      `search[${this.goal.instruction.replace(/, and price lower than.*$/, "")}]`,
      `search[${type}]`,
      `search[${this.goal.attributes[0]} ${type}]`,
      `search[${other}]`,
    ];
  }

  goldAnswer(): string {
    const p = this.byId.get(this.goal.productId)!;
    const opts = Object.entries(this.goal.options).map(([d, v]) => `${d}: ${v}`);
    return `${p.id} ${p.title}${opts.length ? ` (${opts.join(", ")})` : ""}`;
  }

  instructions(): string {
    return [
      "You are shopping online. Find and buy the product that best matches the instruction.",
      "On the search page, search with search[query]. On other pages, click a bracketed item with click[item],",
      "e.g. click[B0ABC12345] to open a product, click[black] to pick an option, click[buy now] to buy, click[next >], click[< prev], click[back to search].",
      "Choose every option the instruction asks for before buying. The episode ends when you buy.",
      "Reward: the share of requested attributes, options and the price limit your purchase meets (1.0 is a perfect match).",
    ].join("\n");
  }

  view(): EnvView {
    return { kind: "text", text: this.render() };
  }

  /**
   * The goal as it is graded: product type, requested attributes and options, price bound (the
   * catalogue is the config's). Not the product it was drawn from: two products that give the
   * same instruction make the same task, since the reward never looks at the product id.
   */
  protected instanceState(): AnchorValue {
    const g = this.goal;
    return { category: g.category, attributes: g.attributes.slice().sort(), options: { ...g.options }, priceUpper: g.priceUpper };
  }

  protected anchorState(): AnchorValue {
    const p = this.page;
    return {
      page: p.kind,
      query: "query" in p ? tokenize(p.query).join(" ") : null,
      n: "page" in p ? p.page : null,
      product: "productId" in p ? p.productId : null,
      section: p.kind === "detail" ? p.section : null,
      selected: Object.entries(this.selected)
        .map(([d, v]) => `${d}=${v}`)
        .sort(),
    };
  }

  private render(): string {
    const head = `Instruction: ${this.goal.instruction}`;
    const page = this.page;
    switch (page.kind) {
      case "search":
        return `${head}\n[Search]`;
      case "results": {
        const hits = this.search(page.query);
        const shown = hits.slice((page.page - 1) * this.config.resultsPerPage, page.page * this.config.resultsPerPage);
        const nav = this.clickables()
          .filter((c) => c === "< prev" || c === "next >")
          .map((c) => `[${titleNav(c)}]`);
        const lines = [head, "[Back to Search]", `Page ${page.page} (Total results: ${hits.length})`, ...nav];
        if (shown.length === 0) lines.push("No products match your search.");
        for (const id of shown) {
          const p = this.byId.get(id)!;
          lines.push(`[${p.id}] ${p.title} | $${p.price.toFixed(2)}`);
        }
        return lines.join("\n");
      }
      case "item": {
        const p = this.byId.get(page.productId)!;
        const lines = [head, "[Back to Search] [< Prev]"];
        for (const [dim, values] of Object.entries(p.options))
          lines.push(`${dim}: ${values.map((v) => (this.selected[dim] === v ? `[${v}] (selected)` : `[${v}]`)).join(" ")}`);
        lines.push(p.title, `Price: $${p.price.toFixed(2)}`, `Rating: ${p.rating.toFixed(1)}`, "[Description] [Features] [Buy Now]");
        return lines.join("\n");
      }
      case "detail": {
        const p = this.byId.get(page.productId)!;
        const body = page.section === "description" ? p.description : p.attributes.map((a) => `- ${a}`).join("\n");
        return `${head}\n[Back to Search] [< Prev]\n${body}`;
      }
    }
  }
}

/**
 * WebShop's reward (Yao et al. 2022, Sec. 3.2): r = r_type * (|U_att ∩ Y_att| + |U_opt ∩ Y_opt|
 * + 1[y_price <= u_price]) / (|U_att| + |U_opt| + 1). WebShop's r_type compares product type
 * text; here the type is known: 1 for the requested type, 0.5 for the same department, 0.1 else.
 */
export function shopReward(goal: ShopGoal, product: Product, selected: Record<string, string>): { reward: number; parts: Record<string, number> } {
  const attrHits = goal.attributes.filter((a) => product.attributes.includes(a)).length;
  const optHits = Object.entries(goal.options).filter(([d, v]) => selected[d] === v).length;
  const priceOk = product.price <= goal.priceUpper ? 1 : 0;
  const rType = product.category === goal.category ? 1 : CATEGORIES[product.category].dept === CATEGORIES[goal.category].dept ? 0.5 : 0.1;
  const total = goal.attributes.length + Object.keys(goal.options).length + 1;
  const reward = Math.round(((rType * (attrHits + optHits + priceOk)) / total) * 10000) / 10000;
  return { reward, parts: { attributeMatches: attrHits, optionMatches: optHits, priceOk, typeFactor: rType } };
}

function makeGoal(catalogue: Product[], rng: Rng): ShopGoal {
  const p = rng.pick(catalogue);
  const cat = CATEGORIES[p.category];
  const attributes = rng.sample(p.attributes, rng.range(1, 2)).sort();
  const dims = Object.keys(p.options);
  const options: Record<string, string> = {};
  for (const d of rng.sample(dims, rng.range(1, dims.length))) options[d] = rng.pick(p.options[d]);
  // A price bound above the product's price, rounded up like WebShop's "lower than 50.00 dollars".
  const priceUpper = Math.ceil((p.price * (1.1 + rng.next() * 0.5)) / 10) * 10;
  const optText = dims.filter((d) => d in options).map((d) => `${d}: ${options[d]}`);
  const instruction = `i need ${attributes.join(" and ")} ${cat.type} with ${optText.join(" and ")}, and price lower than ${priceUpper.toFixed(2)} dollars`;
  return { productId: p.id, category: p.category, attributes, options, priceUpper, instruction };
}

function titleCase(s: string): string {
  return s.split(" ").map(capitalize).join(" ");
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function titleNav(c: string): string {
  return c === "next >" ? "Next >" : "< Prev";
}

function hashText(s: string): number {
  return mixSeed(s);
}

export const shopSpec: EnvSpec<ShopConfig> = {
  id: "shop",
  title: "Shop (WebShop-style)",
  description:
    "Search a generated catalogue with search[query], open products and pick options with click[...], then buy. Reward: WebShop's attribute/option/price match score in [0, 1]; success is a perfect match.",
  configSchema: shopConfigSchema,
  create: (config) => new ShopEnv(config),
};
