// app 2.4.1
// --- util.js ---
export function clamp(x, lo, hi) { return Math.min(hi, Math.max(lo, x)); }
// --- store.js ---
const items = [];
export function add(item) { items.push(item); return items.length; }
// --- main.js ---
console.log("cart size", add({ sku: "A-1", qty: clamp(5, 1, 3) }));
