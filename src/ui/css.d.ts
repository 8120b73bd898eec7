// esbuild bundles an imported stylesheet into app.css beside app.js.
declare module '*.css';
