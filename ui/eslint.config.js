// ESLint for the UI (flat config). Formatting is Prettier's (npm run format), not ESLint's.
// The rules: ESLint's recommended, typescript-eslint's recommended with type information, and a
// ban on every way of handing a string to the HTML parser: what the window shows (agent output,
// logs, file names, prompts) is text and must never be interpreted as markup.
import js from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import svelte from "eslint-plugin-svelte";
import tseslint from "typescript-eslint";

import svelteConfig from "./svelte.config.js";

const htmlSinks = ["innerHTML", "outerHTML"];
// The type every failed command rejects with, generated from the Rust types.
const commandError = { from: "file", name: "CommandError", path: "src/generated/ipc.ts" };

export default defineConfig(
  // Build output, installed packages, and src/generated/ (written by ts-rs from the Rust types).
  globalIgnores(["dist/", "node_modules/", "src/generated/"]),
  {
    files: ["**/*.ts", "**/*.js"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ["eslint.config.js", "svelte.config.js"] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: "error",
    },
    rules: {
      // The shell rejects a command with a `CommandError` (plain data from the Rust error, never an
      // `Error` object); the fake backend and the tests reject and throw it the same way.
      "@typescript-eslint/only-throw-error": ["error", { allow: [commandError] }],
      "@typescript-eslint/prefer-promise-reject-errors": ["error", { allow: [commandError] }],
      // As tsc (noUnusedParameters): a parameter named `_x` is unused on purpose.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      // Assigning HTML: `el.innerHTML = s`, `el["outerHTML"] += s` (reading them is not banned by this).
      "no-restricted-syntax": [
        "error",
        ...htmlSinks.map((name) => ({
          selector: `AssignmentExpression > MemberExpression.left:matches([property.name='${name}'], [property.value='${name}'])`,
          message: `Do not assign ${name}: build nodes with el() and set textContent; agent output is never HTML.`,
        })),
        {
          selector: "CallExpression[callee.property.name=/^(insertAdjacentHTML|setHTMLUnsafe)$/]",
          message:
            "Do not insert HTML (insertAdjacentHTML, setHTMLUnsafe): build nodes with el(); agent output is never HTML.",
        },
        {
          selector: "CallExpression[callee.property.name='createContextualFragment']",
          message: "Do not parse HTML with createContextualFragment: build nodes with el().",
        },
        {
          selector: "CallExpression[callee.object.name='document'][callee.property.name=/^write(ln)?$/]",
          message: "Do not use document.write: build nodes with el().",
        },
        {
          selector: "NewExpression[callee.name='DOMParser']",
          message: "Do not parse HTML with DOMParser: build nodes with el().",
        },
      ],
    },
  },
  {
    // Svelte components: the plugin's recommended rules (`{@html}` is an error there: agent
    // output is never HTML), TypeScript in `<script lang="ts">` with type information.
    files: ["**/*.svelte", "**/*.svelte.ts"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked, svelte.configs.recommended],
    languageOptions: {
      parserOptions: {
        projectService: true,
        extraFileExtensions: [".svelte"],
        parser: tseslint.parser,
        svelteConfig,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      "svelte/no-at-html-tags": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      // TypeScript (svelte-check) already knows the globals and the types of a component's props;
      // typescript-eslint sees another component's props as `any`, so a callback passed to one
      // would be flagged on every argument. svelte-check --fail-on-warnings type-checks them.
      "no-undef": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
    },
  },
  {
    // The state replaces values whole (`$state.raw`, immutable updates) and keeps private
    // bookkeeping (timers, runs asked to stop) that nothing draws: no reactive Set/Map/Date needed.
    files: ["src/state/**/*.svelte.ts"],
    rules: { "svelte/prefer-svelte-reactivity": "off" },
  },
  {
    // The fake backend implements the Promise-returning `Backend` in memory: its methods are
    // `async` without awaiting anything so that a refusal they throw becomes a rejection, as the
    // shell's does. Only require-await is off, only here.
    files: ["src/fake-backend.ts"],
    rules: { "@typescript-eslint/require-await": "off" },
  },
  {
    // The config file itself is plain JavaScript, outside tsconfig.json.
    files: ["**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
