// What every page's script needs: the server's page config, element lookup,
// and the status line.

const config = JSON.parse(document.getElementById("page-config").textContent);
const $ = (id) => document.getElementById(id);

function setStatus(text, isError = false) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", isError);
}

export { config, $, setStatus };
