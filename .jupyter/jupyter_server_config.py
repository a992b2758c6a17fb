# JupyterLab started from the repository root with this folder on its config path (README: `JUPYTER_CONFIG_PATH=.jupyter
# jupyter lab nbs/`) cleans every notebook as it saves it, by nbdev's rules (pyproject.toml [tool.nbdev], jupyter_hooks = true):
# the save leaves the notebook as nbdev-clean would, so that the CI's nbdev-clean gate finds nothing to change.
c.ContentsManager.pre_save_hook = "nbdev.clean.clean_jupyter"
