const pug = require('pug');
const templates = {
  about: 'extends layout\nblock content\n  p(class="about" About us\n',
};
function compileAll(sources) {
  for (const [name, source] of Object.entries(sources)) {
    pug.compile(source);
  }
}
compileAll(templates);
