// `kubectl teal completion bash|zsh|fish`: a script that completes the
// plugin run by its own name, `kubectl-teal <TAB>`, by asking it (__complete,
// the question kubectl asks kubectl_complete-teal for `kubectl teal <TAB>`).
// The scripts only read the answer: candidates a line ("value<TAB>description")
// and a last line ":<directive>", whose bit 4 says "no file names".

import { COMPLETE, DIRECTIVE } from '../complete-protocol.ts';
import { EXIT } from '../errors.ts';
import type { Flags } from '../flags.ts';

const ASK = `kubectl-teal ${COMPLETE}`;
const NO_FILES = DIRECTIVE.noFileComp;

const BASH = `# bash completion of kubectl-teal: source <(kubectl teal completion bash)
_kubectl_teal() {
  local -a lines
  local line directive=0
  mapfile -t lines < <(${ASK} "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
  if (( \${#lines[@]} > 0 )) && [[ \${lines[\${#lines[@]}-1]} == :* ]]; then
    directive=\${lines[\${#lines[@]}-1]#:}
    unset 'lines[\${#lines[@]}-1]'
  fi
  COMPREPLY=()
  for line in "\${lines[@]}"; do
    [[ -n $line ]] && COMPREPLY+=("\${line%%$'\\t'*}")
  done
  # compopt works only while bash completes: sourced and run by hand, there is nothing to turn off.
  if (( directive & ${NO_FILES} )); then compopt +o default 2>/dev/null || true; fi
}
complete -o default -F _kubectl_teal kubectl-teal
`;

const ZSH = `#compdef kubectl-teal
# zsh completion of kubectl-teal: source <(kubectl teal completion zsh), after compinit
_kubectl_teal() {
  local -a lines comps
  local line name directive=0
  lines=("\${(@f)$(${ASK} "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ \${lines[-1]} == :* ]]; then
    directive=\${lines[-1]#:}
    lines=("\${(@)lines[1,-2]}")
  fi
  for line in "\${lines[@]}"; do
    [[ -z $line ]] && continue
    name=\${line%%$'\\t'*}
    if [[ $line == *$'\\t'* ]]; then comps+=("\${name//:/\\\\:}:\${line#*$'\\t'}"); else comps+=("\${name//:/\\\\:}"); fi
  done
  if (( \${#comps} > 0 )); then
    _describe 'kubectl-teal' comps
  elif (( (directive & ${NO_FILES}) == 0 )); then
    _files
  fi
}
compdef _kubectl_teal kubectl-teal
`;

const FISH = `# fish completion of kubectl-teal: kubectl teal completion fish > ~/.config/fish/completions/kubectl-teal.fish
function __kubectl_teal_complete
    set -l words (commandline -opc) (commandline -ct)
    set -e words[1]
    set -l lines (${ASK} $words 2>/dev/null)
    set -l directive 0
    if test (count $lines) -gt 0; and string match -qr '^:[0-9]+$' -- $lines[-1]
        set directive (string sub -s 2 -- $lines[-1])
        set -e lines[-1]
    end
    if test (count $lines) -gt 0
        printf '%s\\n' $lines
    else if test (math "bitand($directive, ${NO_FILES})") -eq 0
        __fish_complete_path (commandline -ct)
    end
end
complete -c kubectl-teal -f -a '(__kubectl_teal_complete)'
`;

const SCRIPTS: Record<string, string> = { bash: BASH, zsh: ZSH, fish: FISH };

/** args.ts has checked the shell (SHELLS). */
export function completion(args: string[], _flags: Flags): number {
  process.stdout.write(SCRIPTS[args[0] ?? ''] ?? '');
  return EXIT.ok;
}
