const items = [];
export function add(item) { items.push(item); return items.length; }
