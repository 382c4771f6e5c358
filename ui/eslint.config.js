// ESLint for the UI (flat config). Formatting is Prettier's (npm run format), not ESLint's.
// The rules: ESLint's recommended, typescript-eslint's recommended with type information, and a
// ban on every way of handing a string to the HTML parser: what the window shows (agent output,
// logs, file names, prompts) is text and must never be interpreted as markup.
import js from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import tseslint from "typescript-eslint";

const htmlSinks = ["innerHTML", "outerHTML"];

export default defineConfig(
  // Build output, installed packages, and src/generated/ (written by ts-rs from the Rust types).
  globalIgnores(["dist/", "node_modules/", "src/generated/"]),
  {
    files: ["**/*.ts", "**/*.js"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ["eslint.config.js"] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: "error",
    },
    rules: {
      // Assigning HTML: `el.innerHTML = s`, `el.outerHTML = s` (reading them is not banned by this).
      "no-restricted-syntax": [
        "error",
        ...htmlSinks.map((name) => ({
          selector: `AssignmentExpression > MemberExpression.left[property.name='${name}']`,
          message: `Do not assign ${name}: build nodes with el() and set textContent; agent output is never HTML.`,
        })),
        {
          selector: "CallExpression[callee.property.name='insertAdjacentHTML']",
          message: "Do not use insertAdjacentHTML: build nodes with el(); agent output is never HTML.",
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
    // The config file itself is plain JavaScript, outside tsconfig.json.
    files: ["**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
