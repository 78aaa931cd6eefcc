// not listed in ORDER: must not be bundled
window.legacy = true;
