"""The Hugging Face Hub: roles in, roles out, failing soft when the Hub is out of reach.

Roles are named by the ids ChatHaruhi itself uses:
- `owner/name[@revision]` is a dataset holding either a role package of ours (role.json) or one
  ChatHaruhi jsonl (a community role such as `chengli-thu/linghuchong`); the files decide which;
- `owner/name/role[@revision]` is `role.jsonl` in the dataset `owner/name`, as in
  `silk-road/ChatHaruhi-RolePlaying/haruhi` or `silk-road/ChatHaruhi-from-RoleLLM/Jack Sparrow`
  (spaces in the role's name are kept).
Downloads go through huggingface_hub's own cache, so anything fetched once is served again
offline. Before any download the endpoint is probed with a short TCP connect: without it,
huggingface_hub retries for about 20 seconds before giving up.
"""

from __future__ import annotations

import functools
import json
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..config import Settings
from ..errors import HubError
from ..i18n import _

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 3.0
PACKAGE_PATTERNS = ["role.json", "system_prompt.txt", "stories.jsonl", "image.*", "images/*", "store/**", "README.md"]
DATASET_PATTERNS = [*PACKAGE_PATTERNS, "*.jsonl", "data/*.jsonl"]  # a ChatHaruhi jsonl dataset, as ChatHaruhi reads it
# a role inside a dataset may have spaces in its name ("silk-road/ChatHaruhi-from-RoleLLM/Jack Sparrow")
_HUB_ID = re.compile(r"^([A-Za-z0-9][\w.-]{0,95})/([\w.-]{1,96})(?:/([\w.-](?:[\w. /-]{0,198}[\w.-])?))?"
                     r"(?:@([\w./-]{1,200}))?$")
HUB_ROLES_FILE = Path(__file__).resolve().parents[2] / "characters" / "hub_roles.json"


@dataclass(frozen=True)
class HubRef:
    repo_id: str
    filename: str | None = None  # a ChatHaruhi jsonl inside the repo; None for a role package
    revision: str | None = None

    @property
    def label(self) -> str:
        path = f"{self.repo_id}/{self.filename[:-6]}" if self.filename else self.repo_id
        return path + (f"@{self.revision}" if self.revision else "")


def parse_hub_id(ref: str) -> HubRef | None:
    """`owner/name`, `owner/name/role` or either with `@revision`; None if ref is not shaped so."""
    m = _HUB_ID.match(ref.strip())
    if not m or ".." in ref:
        return None
    owner, name, rest, rev = m.groups()
    filename = None
    if rest:
        filename = rest if rest.endswith(".jsonl") else rest + ".jsonl"
    return HubRef(f"{owner}/{name}", filename, rev)


SOURCES = {  # the picker's groups for ChatHaruhi's 142 roles, in this order
    "ChatHaruhi-54K": "ChatHaruhi-54K (32 roles)",
    "community": "ChatHaruhi community (15 roles)",
    "RoleLLM": "RoleLLM, English (95 roles)",
}


@dataclass(frozen=True)
class HubRole:
    """One of the ChatHaruhi roles offered by Hub id in the picker."""

    key: str
    ref: str
    name: str  # the name it speaks under in its scenes
    name_en: str
    series: str  # the work, in English and Chinese
    user_name: str = ""
    name_zh: str = ""
    source: str = "ChatHaruhi-54K"

    @property
    def label(self) -> str:
        other = self.name_zh or self.name_en
        return f"{self.name} · {other}" if other and other != self.name else self.name

    @property
    def group(self) -> str:
        return SOURCES.get(self.source, self.source)


def hub_roles(path: Path = HUB_ROLES_FILE) -> list[HubRole]:
    """ChatHaruhi's catalogue (characters/hub_roles.json: names and Hub ids only, no texts), by source."""
    return list(_catalogue(path))


@functools.lru_cache(maxsize=4)
def _catalogue(path: Path) -> tuple[HubRole, ...]:
    """Read once per process: the file ships with the app, and every page load lists it."""
    if not path.is_file():
        return ()
    rows = [HubRole(**row) for row in json.loads(path.read_text(encoding="utf-8"))]
    order = list(SOURCES)
    return tuple(sorted(rows, key=lambda r: order.index(r.source) if r.source in order else len(order)))


def listed_role(ref: str) -> HubRole | None:
    """The catalogue's entry for a Hub id (any revision), if it has one."""
    bare = ref.split("@")[0].strip()
    return next((r for r in hub_roles() if r.ref == bare), None)


def _endpoint(settings: Settings) -> str:
    return (settings.hf_endpoint or DEFAULT_ENDPOINT).rstrip("/")


def hub_reachable(endpoint: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """A TCP connect to the endpoint: fast and honest about 'no network'.

    It runs in a daemon thread because a name lookup is not bounded by the socket timeout: on a
    machine with a silent DNS server it could otherwise hang far longer than a visitor waits.
    """
    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    answer: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((url.hostname or "", port), timeout=timeout):
                answer.append(True)
        except OSError:
            answer.append(False)

    thread = threading.Thread(target=probe, name="hub-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def _explain(exc: Exception, ref: HubRef, offline: bool) -> HubError:
    from huggingface_hub import errors as e

    name = ref.label
    if isinstance(exc, e.LocalEntryNotFoundError) or offline:
        return HubError(
            _("The Hugging Face Hub cannot be reached from here, and '{name}' is not in the local cache. Connect to "
              "the internet once to fetch it, or pick a bundled character.", name=name)
        )
    if isinstance(exc, e.GatedRepoError):
        return HubError(_("'{repo}' is gated: accept its terms on the Hub and set HF_TOKEN.", repo=ref.repo_id))
    if isinstance(exc, e.RepositoryNotFoundError):
        return HubError(_("There is no dataset '{repo}' on the Hub (or it is private and HF_TOKEN is not set).",
                           repo=ref.repo_id))
    if isinstance(exc, e.RevisionNotFoundError):
        return HubError(_("The dataset '{repo}' has no revision '{revision}'.", repo=ref.repo_id, revision=ref.revision))
    if isinstance(exc, e.EntryNotFoundError):
        return HubError(_("The dataset '{repo}' has no file '{file}'.", repo=ref.repo_id, file=ref.filename))
    if isinstance(exc, e.HfHubHTTPError):
        code = getattr(getattr(exc, "response", None), "status_code", "?")
        return HubError(_("The Hub answered with an error ({code}) for '{name}'. Try again later.", code=code, name=name))
    return HubError(_("Could not fetch '{name}' from the Hub ({why}).", name=name, why=type(exc).__name__))


def cache_only(settings: Settings) -> bool:
    """Whether Hub files must come from the local cache alone: the operator said so (HF_HUB_OFFLINE), or
    the Hub's endpoint does not answer."""
    return settings.hub_offline or not hub_reachable(_endpoint(settings))


def fetch(ref: HubRef, settings: Settings) -> Path:
    """The local path of a Hub role: a dataset's folder, or one jsonl file. Cached copies work offline."""
    from huggingface_hub import hf_hub_download, snapshot_download

    endpoint = _endpoint(settings)
    offline = cache_only(settings)
    common = dict(repo_type="dataset", revision=ref.revision, cache_dir=settings.hub_cache, etag_timeout=5,
                  token=settings.hf_token or False, local_files_only=offline, endpoint=endpoint)
    try:
        if ref.filename:
            return Path(hf_hub_download(ref.repo_id, ref.filename, **common))
        return Path(snapshot_download(ref.repo_id, allow_patterns=DATASET_PATTERNS, **common))
    except Exception as exc:
        raise _explain(exc, ref, offline) from None


def dataset_content(folder: Path, ref: HubRef) -> tuple[str, Path]:
    """("package", folder) or ("jsonl", file): what an `owner/name` dataset holds, decided by its files."""
    if (folder / "role.json").is_file():
        return "package", folder
    found = sorted({p for pattern in ("*.jsonl", "data/*.jsonl") for p in folder.glob(pattern)
                    if p.name != "stories.jsonl"})
    if len(found) == 1:
        return "jsonl", found[0]
    if found:
        names = ", ".join(p.relative_to(folder).as_posix() for p in found[:5])
        raise HubError(_("The dataset '{repo}' holds several jsonl files ({names}); name the role too, for example "
                         "'{repo}/{stem}'.", repo=ref.repo_id, names=names, stem=found[0].stem))
    raise HubError(_("The dataset '{repo}' holds neither a role package (role.json) nor a ChatHaruhi jsonl, so there "
                     "is no character to read in it.", repo=ref.repo_id))


def push_plan(folder: Path) -> list[tuple[str, int]]:
    """(path in repo, bytes) for every file an upload would send."""
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*") if p.is_file())


def check_push(repo_id: str, settings: Settings, *, online: bool = True) -> str:
    """Refuse early (before any work) what cannot be pushed; returns the endpoint."""
    if not parse_hub_id(repo_id) or repo_id.count("/") != 1:
        raise HubError(_("'{repo}' is not a repo id; use the form owner/name.", repo=repo_id))
    endpoint = _endpoint(settings)
    if not online:
        return endpoint
    if not settings.hf_token:
        raise HubError(_("Pushing needs a Hugging Face token with write access: set HF_TOKEN."))
    if not hub_reachable(endpoint):
        raise HubError(_("The Hugging Face Hub ({endpoint}) cannot be reached from here; nothing was uploaded.",
                           endpoint=endpoint))
    return endpoint


def push(folder: Path, repo_id: str, settings: Settings, *, private: bool = False,
         message: str | None = None) -> str:
    """Upload a role package folder to a dataset repo (created if missing); returns its URL."""
    from huggingface_hub import HfApi

    ref = HubRef(repo_id)
    endpoint = check_push(repo_id, settings)
    api = HfApi(endpoint=endpoint, token=settings.hf_token)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=folder, repo_type="dataset",
                          commit_message=message or "Upload ChatHaruhi role package")
    except Exception as exc:
        raise _explain(exc, ref, False) from None
    return str(url)
