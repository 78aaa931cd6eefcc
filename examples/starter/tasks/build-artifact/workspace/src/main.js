console.log("cart size", add({ sku: "A-1", qty: clamp(5, 1, 3) }));
