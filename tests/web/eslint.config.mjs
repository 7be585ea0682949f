// ESLint's flat config for the page's shell, www/js, and the report's bootstrap, www/report (run
// by `cargo xtask lint-js` and `cargo xtask test` as `eslint --config tests/web/eslint.config.mjs
// www/js www/report` from the repository root; it lives here because eslint and its plugins are
// installed in tests/web/node_modules).
import js from '@eslint/js';
import globals from 'globals';

/** Assigning these parses a string as HTML: the shell only ever sets text (www/README.md). */
const HTML_SINKS = ['innerHTML', 'outerHTML'];

/** The rules of every module: the recommended set and the shell's own. */
const rules = {
  // `_name`: a parameter kept for its position or its documentation.
  'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }],
  // No string becomes code or HTML (crates/memviz-cli/tests/cli/layering.rs checks the same words
  // in the top-level modules; this also covers www/js's subfolders).
  'no-eval': 'error',
  'no-implied-eval': 'error',
  'no-new-func': 'error',
  'no-restricted-properties': ['error',
    ...HTML_SINKS.map((property) => ({ property, message: 'set text with textContent instead' })),
    { property: 'insertAdjacentHTML', message: 'set text with textContent instead' },
    { property: 'createContextualFragment', message: 'set text with textContent instead' },
    { object: 'document', property: 'write', message: 'set text with textContent instead' },
  ],
  eqeqeq: ['error', 'always'],
  'prefer-const': 'error',
  'no-var': 'error',
};

const WORKER = 'www/js/worker.js';

export default [
  {
    // The main thread's modules: the DOM's globals.
    files: ['www/js/**/*.js'],
    ignores: [WORKER],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.browser } },
    rules: { ...js.configs.recommended.rules, ...rules },
  },
  {
    // A module Web Worker: worker globals (`self`, `postMessage`), no `document` or `window`.
    files: [WORKER],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.worker } },
    rules: { ...js.configs.recommended.rules, ...rules },
  },
  {
    // The report's bootstrap (`memviz html` inlines it): a classic script on the main thread.
    files: ['www/report/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'script', globals: { ...globals.browser } },
    rules: { ...js.configs.recommended.rules, ...rules },
  },
];
